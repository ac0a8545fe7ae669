import { expect, test } from "bun:test";
import { NodeFailure, RouteError } from "../errors.ts";
import { Queues } from "../fleet/queues.ts";
import { type Attempt, type Candidate, attempt } from "./attempt.ts";

const nodes = (...ids: string[]): Candidate[] => ids.map((nodeId) => ({ nodeId, model: "m" }));

function loop(over: Partial<Attempt<Candidate, string>>): Attempt<Candidate, string> {
  return {
    queues: new Queues(),
    maxRetries: 2,
    waitMs: 100,
    signal: new AbortController().signal,
    slots: { parallel: () => 1 },
    call: async () => "answer",
    exhausted: (tried) => new RouteError(503, tried.failures.join("; ")),
    ...over,
  };
}

test("the first-byte budget is the request's: a node that uses it up leaves none for the next", async () => {
  const given: string[] = [];
  const t0 = performance.now();
  const failed = attempt(nodes("a", "b", "c"), loop({
    async call(c, _slot, _excluded, leftMs) {
      given.push(c.nodeId);
      await Bun.sleep(leftMs);
      throw new NodeFailure(`no answer within ${Math.round(leftMs)} ms`);
    },
  }));
  await expect(failed).rejects.toThrow(/^a: no answer within 100 ms$/);
  expect(given).toEqual(["a"]);
  expect(performance.now() - t0).toBeLessThan(150);
});

test("a node that fails fast leaves the rest of the budget to the next, and a queue wait spends it too", async () => {
  const queues = new Queues();
  const busy = await queues.acquire("b", "m", 1, 0); // b's one slot is taken: its candidate waits
  const left: number[] = [];
  const failed = attempt(nodes("a", "b"), loop({
    queues,
    async call(c, _slot, _excluded, leftMs) {
      left.push(leftMs);
      await Bun.sleep(30);
      throw new NodeFailure(`${c.nodeId} refused`);
    },
  }));
  await expect(failed).rejects.toThrow(/^a: a refused; b: no free slot within \d+ ms$/);
  expect(left.length).toBe(1);
  expect(left[0]!).toBeGreaterThan(95);
  busy.release("completed");
});

test("the first candidate is given the whole budget less its time in the queue, however late the event loop comes back to it", async () => {
  const queues = new Queues();
  // A free slot, taken at once (nothing waited in the queue), but handed over a few ms later, as on a busy machine.
  const late = Object.assign(Object.create(queues), {
    acquire: async (...args: Parameters<Queues["acquire"]>) => {
      const slot = await queues.acquire(...args);
      await Bun.sleep(15);
      return slot;
    },
  });
  const given: number[] = [];
  await attempt(nodes("a"), loop({
    queues: late,
    async call(_c, _slot, _excluded, leftMs) {
      given.push(leftMs);
      return "answer";
    },
  }));
  expect(given[0]!).toBeGreaterThan(99);
});

test("a request moved off its node is not lost when the other candidates fail: it waits there again, once", async () => {
  const queues = new Queues();
  const busy = await queues.acquire("a", "m", 1, 0); // a's one slot is taken: the request waits there
  const called: string[] = [];
  const answer = attempt(nodes("a", "b"), loop({
    queues,
    waitMs: 1000,
    async call(c) {
      called.push(c.nodeId);
      if (c.nodeId === "b") throw new NodeFailure("b refused");
      return `answer from ${c.nodeId}`;
    },
  }));
  await Bun.sleep(5);
  expect(queues.move("a", "m", 1, "as a load there evicts its model")).toBe(1);
  await Bun.sleep(5);
  busy.release("completed");
  expect(await answer).toBe("answer from a");
  expect(called).toEqual(["b", "a"]);
});

test("a generator of candidates is told the node the last was moved off as a load there evicts its model, and not one the rebalancer moved it off", async () => {
  const queues = new Queues();
  const busy = await queues.acquire("a", "m", 1, 0); // a's one slot is taken: the request waits there
  const told: (string | undefined)[] = [];
  function* source(): Generator<Candidate, void, string | undefined> {
    told.push(yield { nodeId: "a", model: "m" });
    told.push(yield { nodeId: "a", model: "m" });
    told.push(yield { nodeId: "a", model: "m" });
  }
  const answer = attempt(source(), loop({ queues, waitMs: 1000 }));
  await Bun.sleep(5);
  expect(queues.move("a", "m", 1, "as a load there evicts its model", true)).toBe(1);
  await Bun.sleep(5);
  expect(queues.move("a", "m", 1, "by the rebalancer")).toBe(1);
  await Bun.sleep(5);
  busy.release("completed");
  expect(await answer).toBe("answer");
  expect(told).toEqual(["a", undefined]);
});
