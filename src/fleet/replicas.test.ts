import { describe, expect, test } from "bun:test";
import type { FinishRequest } from "./finish-time.ts";
import { chooseReplica, REPLICA_HOLD_MS, type ReplicaCandidate, ReplicaHolds } from "./replicas.ts";

const MODEL = "qwen3:8b";
// 1 s of prefill and 2 s of decode: each request takes 3 s wherever the model is resident.
const req: FinishRequest = { promptTokens: 500, outputTokens: 100, typicalOutputTokens: 100 };

function node(id: string, over: Partial<ReplicaCandidate> = {}): ReplicaCandidate {
  return {
    nodeId: id,
    resident: false,
    sizeGb: 5,
    queue: { pending: 0, inFlight: 0, lastDispatchAt: 0 },
    slots: 1,
    speed: { decodeTps: 50, prefillTps: 500, loadMs: 1500 },
    memory: { freeGb: 40, modelsFree: 3, evictable: [] },
    cachedPrefixTokens: 0,
    reloadsRunner: false,
    evidentMemoryGb: 64,
    busyGb: 0,
    weightsGb: 5,
    ...over,
  };
}

/** The hot node: the model resident on its one slot, one request running and `waiting` behind it. */
const hot = (waiting: number, over: Partial<ReplicaCandidate> = {}) => node("hot", { resident: true, queue: { pending: waiting, inFlight: 1, lastDispatchAt: 1 }, ...over });
const choose = (candidates: ReplicaCandidate[], held: (id: string) => boolean = () => false) => chooseReplica(MODEL, "hot", candidates, req, held);

describe("a second replica", () => {
  test("goes where a cold load finishes clearly sooner than the next request behind the queue, the soonest such node", () => {
    // Behind one running and one waiting: 6 s of wait, then 3 s. A load of 1.5 s then 3 s elsewhere.
    const slowLoad = node("slow-load", { speed: { decodeTps: 50, prefillTps: 500, loadMs: 4000 } });
    expect(choose([hot(1), slowLoad, node("cold")])).toEqual({ model: MODEL, from: "hot", to: "cold", hotMs: 9000, coldMs: 4500 });
  });

  test("not while the queue's next request finishes about as soon as a cold load would (the margin)", () => {
    // Nothing waits: no replica whatever the estimates.
    expect(choose([hot(0), node("cold")])).toBeNull();
    // One running, one waiting, but a 5.5 s load: 9 s against 8.5 s is within the margin.
    expect(choose([hot(1), node("cold", { speed: { decodeTps: 50, prefillTps: 500, loadMs: 5500 } })])).toBeNull();
    expect(choose([hot(1), node("cold", { speed: { decodeTps: 50, prefillTps: 500, loadMs: 4000 } })])).toMatchObject({ to: "cold" });
  });

  test("not onto a node that has the model already, or requests for it, or that a recent replica warm holds", () => {
    expect(choose([hot(3), node("has-it", { resident: true })])).toBeNull();
    expect(choose([hot(3), node("loading", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 1 } })])).toBeNull();
    expect(choose([hot(3), node("held")], (id) => id === "held")).toBeNull();
  });

  test("never where the load would evict a model with work: only idle models make room", () => {
    // 2 GB free, the rest taken by a busy model (not evictable: a warm leaves busy models alone): the estimate excludes it.
    expect(choose([hot(3), node("busy", { memory: { freeGb: 2, modelsFree: 3, evictable: [] }, busyGb: 30 })])).toBeNull();
    // Evicting an idle 10 GB model makes room.
    expect(choose([hot(3), node("idle", { memory: { freeGb: 2, modelsFree: 3, evictable: [{ name: "m10", sizeGb: 10, reloadMs: 0, busyMs: 0 }] } })])).toMatchObject({ to: "idle" });
  });

  test("on a node of unknown memory, only beside its busy models within the most it evidently holds", () => {
    expect(choose([hot(3), node("tight", { memory: null, evidentMemoryGb: 12, busyGb: 8 })])).toBeNull();
    expect(choose([hot(3), node("roomy", { memory: null, evidentMemoryGb: 24, busyGb: 8 })])).toMatchObject({ to: "roomy" });
  });

  test("none when the hot node is not a candidate that has the model (draining, gone)", () => {
    expect(choose([node("cold")])).toBeNull();
  });
});

describe("the holds", () => {
  test("a replica warm holds its model and its target node for REPLICA_HOLD_MS, then lets go", () => {
    let now = 0;
    const holds = new ReplicaHolds(() => now);
    holds.record({ model: MODEL, from: "hot", to: "cold", hotMs: 9000, coldMs: 4500 });
    expect([holds.modelHeld(MODEL), holds.nodeHeld("cold"), holds.nodeHeld("hot"), holds.modelHeld("other")]).toEqual([true, true, false, false]);
    now = REPLICA_HOLD_MS - 1;
    expect([holds.modelHeld(MODEL), holds.nodeHeld("cold")]).toEqual([true, true]);
    now = REPLICA_HOLD_MS;
    expect([holds.modelHeld(MODEL), holds.nodeHeld("cold")]).toEqual([false, false]);
  });
});
