import { afterEach, beforeEach, expect, test } from "bun:test";
import { Moved, QueueFull, Queues, type Slot, SlotTimeout } from "./queues.ts";

const NODE = "studio";
const MODEL = "qwen3:8b";
/** A wait no test reaches: every waiter is let in, moved, aborted or ended with the test. */
const LONG = 60_000;

let queues: Queues;
// Ends whatever still waits when a test is over, so no timer outlives it.
let testOver: AbortController;
beforeEach(() => {
  queues = new Queues();
  testOver = new AbortController();
});
afterEach(() => testOver.abort(new Error("test over")));

/** Asks for a slot on NODE:MODEL with `concurrency` slots; waits up to LONG unless told otherwise. */
function acquire(concurrency: number, opts: { waitMs?: number; signal?: AbortSignal; maxPending?: number; node?: string; model?: string } = {}): Promise<Slot> {
  const signal = opts.signal ? AbortSignal.any([opts.signal, testOver.signal]) : testOver.signal;
  return Promise.resolve(queues.acquire(opts.node ?? NODE, opts.model ?? MODEL, concurrency, opts.waitMs ?? LONG, signal, opts.maxPending));
}

/** What a pending acquire came to, without an unhandled rejection: the slot, or the error. */
const outcome = (p: Promise<Slot>) => p.then((slot) => ({ slot }), (error: unknown) => ({ error }));
const view = () => queues.view(NODE, MODEL);
const entry = () => queues.entries().find((e) => e.key === Queues.key(NODE, MODEL))!;

test("requests up to the concurrency get a slot at once, without waiting", async () => {
  const slots = await Promise.all([acquire(2), acquire(2)]);
  expect(slots.every((s) => s.waitedMs < 50)).toBe(true);
  expect(view()).toMatchObject({ inFlight: 2, pending: 0, concurrency: 2 });
});

test("a free slot is handed over in the same turn (no promise to wait on); a wait is a promise", async () => {
  const free = queues.acquire(NODE, MODEL, 1, LONG, testOver.signal);
  expect(free).not.toBeInstanceOf(Promise);
  const waiting = queues.acquire(NODE, MODEL, 1, LONG, testOver.signal);
  expect(waiting).toBeInstanceOf(Promise);
  (free as Slot).release("completed");
  expect((await waiting).waitedMs).toBeGreaterThanOrEqual(0);
});

test("requests past the concurrency wait in arrival order, each release letting the next one in", async () => {
  const first = await acquire(1);
  const served: string[] = [];
  const waiting = ["b", "c", "d"].map((name) => acquire(1).then((slot) => (served.push(name), slot)));
  expect(view()).toMatchObject({ inFlight: 1, pending: 3 });
  first.release("completed");
  (await waiting[0]!).release("completed");
  expect(view()).toMatchObject({ inFlight: 1, pending: 1 });
  (await waiting[1]!).release("completed");
  (await waiting[2]!).release("completed");
  expect(served).toEqual(["b", "c", "d"]);
  expect(view()).toMatchObject({ inFlight: 0, pending: 0 });
});

test("a slot freed for a waiter is its own: a request arriving at that moment waits behind it", async () => {
  const first = await acquire(1);
  const waiter = acquire(1);
  first.release("completed");
  const newcomer = outcome(acquire(1));
  expect(view()).toMatchObject({ inFlight: 1, pending: 1 });
  (await waiter).release("completed");
  expect("slot" in (await newcomer)).toBe(true);
});

test("a request that had to wait reports how long it waited", async () => {
  const first = await acquire(1);
  const second = acquire(1);
  await Bun.sleep(5);
  first.release("completed");
  expect((await second).waitedMs).toBeGreaterThan(0);
});

test("releasing a slot twice frees one place only", async () => {
  const first = await acquire(1);
  const second = acquire(1);
  const third = outcome(acquire(1));
  first.release("completed");
  first.release("completed");
  await second;
  expect(view()).toMatchObject({ inFlight: 1, pending: 1 });
  expect(entry().completed).toBe(1);
  testOver.abort(new Error("test over"));
  expect(await third).toEqual({ error: new Error("test over") });
});

test("a request that gets no slot within waitMs fails with SlotTimeout and leaves the queue", async () => {
  const first = await acquire(1);
  const late = await outcome(acquire(1, { waitMs: 5 }));
  expect(late).toEqual({ error: new SlotTimeout(5) });
  expect((late as { error: Error }).error.message).toBe("no free slot within 5 ms");
  expect(view().pending).toBe(0);
  first.release("completed");
  expect(view().inFlight).toBe(0);
});

test("with a maximum queue depth, a request that would wait behind that many is refused at once with QueueFull", async () => {
  await acquire(1, { maxPending: 2 });
  const waiting = [outcome(acquire(1, { maxPending: 2 })), outcome(acquire(1, { maxPending: 2 }))];
  const refused = await outcome(acquire(1, { maxPending: 2 }));
  expect(refused).toEqual({ error: new QueueFull(2) });
  expect((refused as { error: Error }).error.message).toBe("2 requests already waiting");
  expect(entry()).toMatchObject({ pending: 2, max_queue_depth: 2 });
  testOver.abort(new Error("test over"));
  await Promise.all(waiting);
});

test("a maximum queue depth of 0 refuses any wait, but never a request that finds a free slot", async () => {
  const slot = await acquire(1, { maxPending: 0 });
  expect(await outcome(acquire(1, { maxPending: 0 }))).toEqual({ error: new QueueFull(0) });
  slot.release("completed");
  expect("slot" in (await outcome(acquire(1, { maxPending: 0 })))).toBe(true);
});

test("aborting a waiter's signal takes it off the queue with the signal's reason; the others keep their places", async () => {
  const first = await acquire(1);
  const client = new AbortController();
  const gone = outcome(acquire(1, { signal: client.signal }));
  const next = acquire(1);
  client.abort(new Error("client went away"));
  expect(await gone).toEqual({ error: new Error("client went away") });
  expect(view().pending).toBe(1);
  first.release("completed");
  await next;
  expect(view()).toMatchObject({ inFlight: 1, pending: 0 });
});

test("a waiter whose signal is already aborted never joins the queue", async () => {
  await acquire(1);
  expect(await outcome(acquire(1, { signal: AbortSignal.abort(new Error("cancelled")) }))).toEqual({ error: new Error("cancelled") });
  expect(view().pending).toBe(0);
});

test("a request already aborted (its client gone) takes no free slot", async () => {
  expect(await outcome(acquire(1, { signal: AbortSignal.abort(new Error("client gone")) }))).toEqual({ error: new Error("client gone") });
  expect(view()).toMatchObject({ inFlight: 0, pending: 0 });
});

test("raising a queue's concurrency lets its waiters in at once", async () => {
  await acquire(1);
  const waiting = [acquire(1), acquire(1)];
  await acquire(4);
  await Promise.all(waiting);
  expect(view()).toMatchObject({ inFlight: 4, pending: 0, concurrency: 4 });
});

test("the rebalancer's move takes the newest waiters off, which fail with Moved; the oldest keep their turn", async () => {
  await acquire(1);
  const waiting = [1, 2, 3, 4].map(() => outcome(acquire(1)));
  expect(queues.move(NODE, MODEL, 2, "by the rebalancer")).toBe(2);
  const [third, fourth] = await Promise.all(waiting.slice(2));
  expect(third).toEqual({ error: new Moved(NODE, "by the rebalancer", false) });
  expect((fourth as { error: Moved }).error.from).toBe(NODE);
  expect(entry()).toMatchObject({ pending: 2, rebalanced: 2 });
  expect(queues.move(NODE, MODEL, 10, "by the rebalancer")).toBe(2);
  expect(queues.move("elsewhere", MODEL, 1, "by the rebalancer")).toBe(0);
  expect(entry()).toMatchObject({ pending: 0, rebalanced: 4 });
});

test("an unused queue looks idle: nothing waiting or running, one slot, a 5 s latency guess, never dispatched", () => {
  expect(queues.view("new-node", MODEL)).toEqual({ pending: 0, inFlight: 0, concurrency: 1, avgLatencyMs: 5000, lastDispatchAt: 0, promptTokens: 0 });
});

test("a node's load counts the requests running and waiting on all its models, and no other node's", async () => {
  await acquire(1);
  const waiting = outcome(acquire(1));
  await acquire(2, { model: "llama3.2:3b" });
  await acquire(1, { node: "other" });
  expect(queues.nodeLoad(NODE)).toEqual({ inFlight: 2, pending: 1 });
  expect(queues.nodeLoad("nobody")).toEqual({ inFlight: 0, pending: 0 });
  testOver.abort(new Error("test over"));
  await waiting;
});

test("finished requests count as completed or failed; each completed latency moves the estimate a fifth of the way from its prior, the shown average from the first measurement", async () => {
  const before = Date.now();
  const [a, b] = await Promise.all([acquire(2), acquire(2)]);
  expect(view().lastDispatchAt).toBeGreaterThanOrEqual(before);
  expect(entry().avg_latency_ms).toBeNull();
  a.release("completed", 1000);
  b.release("failed", 100);
  expect(entry()).toMatchObject({ completed: 1, failed: 1, in_flight: 0, avg_latency_ms: 1000 });
  expect(view().avgLatencyMs).toBe(4200);
  const c = await acquire(2);
  c.release("completed", 2000);
  expect(entry().avg_latency_ms).toBe(1200);
});

test("the start of the oldest running request is known while any runs", async () => {
  expect(queues.oldestRunningSince(NODE, MODEL)).toBeNull();
  const before = Date.now();
  const slot = await acquire(1);
  const since = queues.oldestRunningSince(NODE, MODEL)!;
  expect(since).toBeGreaterThanOrEqual(before);
  expect(since).toBeLessThanOrEqual(Date.now());
  slot.release("failed");
  expect(queues.oldestRunningSince(NODE, MODEL)).toBeNull();
});

test("token usage is summed per node:model, prompts with nothing cached counted apart from the warm ones", () => {
  queues.recordUsage(NODE, MODEL, { latencyMs: 800, promptTokens: 1000, completionTokens: 50, cachedTokens: 0 });
  queues.recordUsage(NODE, MODEL, { latencyMs: 200, promptTokens: 1200, completionTokens: 30, cachedTokens: 900 });
  expect(entry().usage).toEqual({
    samples: 2,
    latencyMs: 1000,
    promptTokens: 2200,
    completionTokens: 80,
    cachedTokens: 900,
    coldRequests: 1,
    warmPromptTokens: 1200,
    warmCachedTokens: 900,
  });
});

test("a queue counts the prompt tokens of the requests waiting and running on it, until each leaves", async () => {
  const q = new Queues();
  const tokens = () => q.view("n", MODEL).promptTokens;
  const running = (await q.acquire("n", MODEL, 1, 1000, undefined, undefined, 2000)) as Slot;
  const waiting = q.acquire("n", MODEL, 1, 1000, undefined, undefined, 30) as Promise<Slot>;
  const leaving = q.acquire("n", MODEL, 1, 20, undefined, undefined, 500) as Promise<Slot>;
  expect(tokens()).toBe(2530);
  await expect(leaving).rejects.toBeInstanceOf(SlotTimeout);
  expect(tokens()).toBe(2030);
  running.release("completed");
  (await waiting).release("completed");
  expect(tokens()).toBe(0);
});
