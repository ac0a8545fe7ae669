import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Warmer } from "./preloader.ts";
import { Moved, Queues } from "./queues.ts";
import { rebalance, type ReplicaSources, soonerElsewhere, warmReplicas } from "./rebalancer.ts";
import { type ReplicaCandidate, ReplicaHolds } from "./replicas.ts";
import { type NodeSpec, quietly, testFleet } from "./test-fixtures.ts";

const MODEL = "qwen3:8b";
const busy: NodeSpec = { id: "busy", loaded: { [MODEL]: 5 } };

let queues: Queues;
let testOver: AbortController;
beforeEach(() => {
  queues = new Queues();
  testOver = new AbortController();
});
afterEach(() => testOver.abort(new Error("test over")));

/** `running` requests holding every slot of node:MODEL and `waiting` more behind them; resolves to what each waiter came to. */
async function load(nodeId: string, running: number, waiting = 0): Promise<Promise<unknown>[]> {
  for (let i = 0; i < running; i++) await queues.acquire(nodeId, MODEL, running, 60_000, testOver.signal);
  return Array.from({ length: waiting }, () => Promise.resolve(queues.acquire(nodeId, MODEL, running, 60_000, testOver.signal)).then(() => "slot", (e: unknown) => e));
}

/** One rebalancer pass over a fleet of `nodes`, by default under the point scorer (which moves onto a node that would load the model). */
function pass(nodes: NodeSpec[], rebalancer: Record<string, number> = {}, strategy = "score"): number {
  const { registry, config } = testFleet(nodes, { rebalancer, routing: { strategy } });
  return quietly(() => rebalance(registry, queues, config));
}

test("waiting requests move to another node with the model and free slots, the newest first, as many as it has free", async () => {
  const waiters = await load("busy", 1, 5);
  expect(pass([busy, { id: "spare", onDisk: { [MODEL]: 5 }, parallel: 2 }])).toBe(2);
  testOver.abort(new Error("test over"));
  const outcomes = await Promise.all(waiters);
  expect(outcomes.slice(3)).toEqual([new Moved("busy", "by the rebalancer", false), new Moved("busy", "by the rebalancer", false)]);
  expect(outcomes.slice(0, 3).every((o) => !(o instanceof Moved))).toBe(true);
});

test("a queue shorter than rebalancer.threshold is left alone", async () => {
  await load("busy", 1, 3);
  const spare = { id: "spare", onDisk: { [MODEL]: 5 }, parallel: 4 };
  expect(pass([busy, spare])).toBe(0);
  expect(pass([busy, spare], { threshold: 3 })).toBe(3);
});

test("one pass moves at most rebalancer.maxPerCycle requests", async () => {
  await load("busy", 1, 8);
  expect(pass([busy, { id: "spare", onDisk: { [MODEL]: 5 }, parallel: 8 }])).toBe(3);
  expect(pass([busy, { id: "spare", onDisk: { [MODEL]: 5 }, parallel: 8 }], { maxPerCycle: 2 })).toBe(2);
});

test("the per-pass cap holds across every backed-up queue", async () => {
  await load("busy", 1, 4);
  await load("also-busy", 1, 4);
  const spare = { id: "spare", onDisk: { [MODEL]: 5 }, parallel: 8 };
  expect(pass([busy, { id: "also-busy", loaded: { [MODEL]: 5 } }, spare], { maxPerCycle: 5 })).toBe(5);
  expect(queues.nodeLoad("busy").pending + queues.nodeLoad("also-busy").pending).toBe(3);
});

test("only free slots count: not a node that is draining, offline, has its Ollama down, lacks the model, or has its own waiters", async () => {
  await load("busy", 1, 6);
  await load("queued", 1, 1);
  await load("half-used", 1);
  const has = { onDisk: { [MODEL]: 5 } };
  const nodes: NodeSpec[] = [
    busy,
    { id: "leaving", ...has, draining: true },
    { id: "gone", ...has, offline: true },
    { id: "no-ollama", ...has, ollamaDown: true },
    { id: "other-models", onDisk: { "llama3.2:3b": 2 } },
    { id: "queued", ...has, parallel: 4 },
    { id: "half-used", ...has, parallel: 2 },
  ];
  expect(pass(nodes)).toBe(1);
  expect(queues.view("busy", MODEL).pending).toBe(5);
});

test("not a node whose memory is too small for the model", async () => {
  await load("busy", 1, 4);
  const big = { [MODEL]: 20 };
  const small = { id: "small", onDisk: big, parallel: 4, memory: { totalGb: 16, availableGb: 12 } };
  expect(pass([{ id: "busy", loaded: big }, small])).toBe(0);
  expect(pass([{ id: "busy", loaded: big }, { ...small, memory: { totalGb: 64, availableGb: 50 } }])).toBe(3);
});

describe("under finish-time", () => {
  /** The estimate's view: a 3 s request (1 s prefill, 2 s decode) on one slot per node; `queue` and `runningForMs` per node. */
  const node = (nodeId: string, resident: boolean, pending: number, inFlight: number, runningForMs = 0): ReplicaCandidate => ({
    nodeId,
    resident,
    sizeGb: 5,
    slots: 1,
    speed: { decodeTps: 50, prefillTps: 500, loadMs: 1000 },
    memory: null,
    cachedPrefixTokens: 0,
    reloadsRunner: false,
    evidentMemoryGb: 64,
    busyGb: 0,
    weightsGb: 5,
    queue: { pending, inFlight, lastDispatchAt: 1 },
    runningForMs,
  });
  const request = { promptTokens: 500, outputTokens: 100, typicalOutputTokens: 100 };

  test("the newest waiters move while the last would finish at least SPILL_MIN_MS sooner on a node with the model loaded, each move counted there", () => {
    // busy's last of 5 waiting finishes in 18 s; idle's next in 3, then 6, 9, 12: three moves, the fourth would not gain.
    expect(soonerElsewhere("busy", { candidates: [node("busy", true, 5, 1), node("idle", true, 0, 0)], request }, 5)).toBe(3);
    expect(soonerElsewhere("busy", { candidates: [node("busy", true, 5, 1), node("idle", true, 0, 0)], request }, 2)).toBe(2);
    // A node that would load the model first is the ranking's to weigh, not a move's.
    expect(soonerElsewhere("busy", { candidates: [node("busy", true, 5, 1), node("cold", false, 0, 0)], request }, 5)).toBe(0);
  });

  test("a node whose running request is long overdue (stuck behind a load inside it) is left by the requests waiting for it", () => {
    const other = node("other", true, 0, 2); // its next in 9 s
    expect(soonerElsewhere("stuck", { candidates: [node("stuck", true, 1, 1), other], request }, 5)).toBe(0);
    // 20 s into a 3 s request: expected to run as long again as it is late, so the one waiting finishes in 20 s there.
    expect(soonerElsewhere("stuck", { candidates: [node("stuck", true, 1, 1, 20_000), other], request }, 5)).toBe(1);
  });

  test("the pass moves what the estimate says, from a queue of rebalancer.threshold or more", async () => {
    await load("busy", 1, 5);
    const { registry, config } = testFleet([busy, { id: "idle", loaded: { [MODEL]: 5 } }], { rebalancer: { maxPerCycle: 5 }, routing: { strategy: "finish-time" } });
    const inputs = () => ({ candidates: [node("busy", true, queues.view("busy", MODEL).pending, 1), node("idle", true, 0, 0)], request });
    expect(quietly(() => rebalance(registry, queues, config, inputs))).toBe(3);
    expect(queues.view("busy", MODEL).pending).toBe(2);
    expect(quietly(() => rebalance(registry, queues, config, inputs))).toBe(0); // 2 waiting: under the threshold
  });
});

describe("the replica pass", () => {
  /** The estimate's view: busy has MODEL on its one slot with `waiting` behind; spare has room and a 1 s load. */
  const candidates = (waiting: number): ReplicaCandidate[] => {
    const base = { sizeGb: 5, slots: 1, speed: { decodeTps: 50, prefillTps: 500, loadMs: 1000 }, memory: { freeGb: 40, modelsFree: 3, evictable: [] }, cachedPrefixTokens: 0, reloadsRunner: false, evidentMemoryGb: 64, busyGb: 0, weightsGb: 5 };
    return [
      { ...base, nodeId: "busy", resident: true, queue: { pending: waiting, inFlight: 1, lastDispatchAt: 1 } },
      { ...base, nodeId: "spare", resident: false, queue: { pending: 0, inFlight: 0, lastDispatchAt: 0 } },
    ];
  };
  const fleet = (strategy = "finish-time") => testFleet([busy, { id: "spare", onDisk: { [MODEL]: 5 } }], { routing: { strategy } });

  function sources(): ReplicaSources & { loads: string[] } {
    const loads: string[] = [];
    const warmer = new Warmer(async (url, model) => {
      loads.push(`${url} ${model}`);
      return 1e9;
    });
    return { loads, warmer, inputs: (model) => ({ candidates: model === MODEL ? candidates(queues.view("busy", MODEL).pending) : [], request: { promptTokens: 500, outputTokens: 100, typicalOutputTokens: 100 } }) };
  }

  test("warms the model on the node whose cold load beats the queue, once while the hold lasts", async () => {
    await load("busy", 1, 2);
    const { registry, config } = fleet();
    const src = sources();
    const holds = new ReplicaHolds();
    expect(quietly(() => warmReplicas(registry, queues, config, src, holds))).toMatchObject([{ model: MODEL, from: "busy", to: "spare" }]);
    expect(src.loads).toEqual([`http://spare.test:11434 ${MODEL}`]);
    expect(quietly(() => warmReplicas(registry, queues, config, src, holds))).toEqual([]);
    expect(src.loads).toHaveLength(1);
  });

  test("nothing without waiting requests, nor under a strategy that does not estimate finish times", async () => {
    const src = sources();
    const pass = ({ registry, config }: ReturnType<typeof fleet>) => quietly(() => warmReplicas(registry, queues, config, src, new ReplicaHolds()));
    await load("busy", 1);
    expect(pass(fleet())).toEqual([]);
    await load("busy", 0, 2); // two more behind the one running
    expect(pass(fleet("score"))).toEqual([]);
    expect(src.loads).toEqual([]);
  });
});
