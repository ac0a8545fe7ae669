import { describe, expect, test } from "bun:test";
import { EVICT_MS, leftOfMs, type FinishCandidate, type FinishRequest, estimateFinish, rankByFinishTime } from "./finish-time.ts";

const req: FinishRequest = { promptTokens: 1000, outputTokens: 200, typicalOutputTokens: 200 };

function node(id: string, over: Partial<FinishCandidate> = {}): FinishCandidate {
  return {
    nodeId: id,
    resident: true,
    sizeGb: 10,
    queue: { pending: 0, inFlight: 0, lastDispatchAt: 0 },
    slots: 1,
    speed: { decodeTps: 20, prefillTps: 500, loadMs: 5000 },
    memory: null,
    cachedPrefixTokens: 0,
    reloadsRunner: false,
    evidentMemoryGb: 16,
    ...over,
  };
}

const order = (cs: FinishCandidate[], r = req) => rankByFinishTime(cs, r).ranked.map((e) => e.candidate.nodeId);

describe("the estimate", () => {
  test("adds the wait, the load, the prefill of what is not cached and the decode, in ms", () => {
    const c = node("a", { resident: false, queue: { pending: 1, inFlight: 2, lastDispatchAt: 0 }, slots: 2, cachedPrefixTokens: 500 });
    // Two requests ahead (one queued, one beyond the slots but one), each 2 s prefill + 10 s decode, over 2 slots.
    expect(estimateFinish(c, req)).toMatchObject({ ms: 12000 + 5000 + 1000 + 10000, breakdown: { wait_ms: 12000, load_ms: 5000, evict_ms: 0, prefill_ms: 1000, decode_ms: 10000 } });
  });

  test("a free slot means no wait", () => {
    expect(estimateFinish(node("a", { queue: { pending: 0, inFlight: 3, lastDispatchAt: 0 }, slots: 4 }), req)).toMatchObject({ breakdown: { wait_ms: 0 } });
  });

  test("a slow idle node loses to a fast busy one when the queue is short", () => {
    const slowIdle = node("slow", { speed: { decodeTps: 10, prefillTps: 200, loadMs: 5000 } });
    const fastBusy = node("fast", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, speed: { decodeTps: 80, prefillTps: 2000, loadMs: 2000 } });
    // slow: 5 s prefill + 20 s decode; fast: one ahead of 3 s, then 3 s.
    expect(order([slowIdle, fastBusy])).toEqual(["fast", "slow"]);
  });

  test("and wins when the fast one's queue is long", () => {
    const slowIdle = node("slow", { speed: { decodeTps: 10, prefillTps: 200, loadMs: 5000 } });
    const fastBusy = node("fast", { queue: { pending: 8, inFlight: 1, lastDispatchAt: 0 }, speed: { decodeTps: 80, prefillTps: 2000, loadMs: 2000 } });
    expect(order([fastBusy, slowIdle])).toEqual(["slow", "fast"]);
  });

  test("a cold load on a big fast node beats a long queue on a small one", () => {
    const small = node("small", { queue: { pending: 4, inFlight: 1, lastDispatchAt: 0 } });
    const big = node("big", { resident: false, slots: 4, speed: { decodeTps: 60, prefillTps: 3000, loadMs: 6000 }, memory: { freeGb: 150, modelsFree: 3, evictable: [] } });
    expect(order([small, big])).toEqual(["big", "small"]);
  });

  test("a model that does not fit, even after evicting the models loaded there, is excluded", () => {
    const full = node("full", { resident: false, sizeGb: 20, memory: { freeGb: 4, modelsFree: 3, evictable: [{ name: "m6", sizeGb: 6, reloadMs: 0, busyMs: 0 }] } });
    const roomy = node("roomy", { resident: false, sizeGb: 20, memory: { freeGb: 40, modelsFree: 3, evictable: [] } });
    const { ranked, excluded } = rankByFinishTime([full, roomy], req);
    expect(ranked.map((e) => e.candidate.nodeId)).toEqual(["roomy"]);
    expect(excluded).toEqual([{ nodeId: "full", reason: "model needs 20 GB; 10 GB free even after evicting the models loaded there" }]);
  });

  test("when none fits by what herd knows of their memory, they are ranked anyway: the node knows better", () => {
    const busy = (id: string, freeGb: number) => node(id, { resident: false, sizeGb: 20, memory: { freeGb, modelsFree: 3, evictable: [] } });
    const { ranked, excluded } = rankByFinishTime([busy("a", 4), busy("b", 8)], req);
    expect(ranked.map((e) => e.candidate.nodeId)).toEqual(["a", "b"]);
    expect(excluded.map((e) => e.nodeId)).toEqual(["a", "b"]);
  });

  test("evicting models to make room costs their unloads, in the order the node evicts them", () => {
    const evictable = [3, 12, 4].map((sizeGb) => ({ name: `m${sizeGb}`, sizeGb, reloadMs: 0, busyMs: 0 }));
    const c = node("a", { resident: false, sizeGb: 20, memory: { freeGb: 5, modelsFree: 3, evictable } });
    // 5 + 3 + 12 = 20: the first two go.
    expect(estimateFinish(c, req)).toMatchObject({ breakdown: { evict_ms: 2 * EVICT_MS }, evicts: ["m3", "m12"] });
  });

  test("evicting a model asked for lately costs its next request a load: the choice weighs it, the finish does not", () => {
    const evicts = node("evicts", { resident: false, sizeGb: 20, memory: { freeGb: 5, modelsFree: 3, evictable: [{ name: "m20", sizeGb: 20, reloadMs: 8000, busyMs: 0 }] } });
    const roomy = node("roomy", { resident: false, sizeGb: 20, memory: { freeGb: 40, modelsFree: 3, evictable: [] }, speed: { decodeTps: 15, prefillTps: 400, loadMs: 5000 } });
    const e = estimateFinish(evicts, req);
    expect(e).toMatchObject({ ms: 5000 + EVICT_MS + 2000 + 10000, breakdown: { reload_evicted_ms: 8000 } });
    // roomy finishes later (2.5 s prefill, 13.3 s decode) but costs no other request a reload.
    expect(order([evicts, roomy])).toEqual(["roomy", "evicts"]);
  });

  test("a load that must evict a busy model waits for its running requests to end, and costs its next one a load", () => {
    const busy = { name: "m20", sizeGb: 20, reloadMs: 8000, busyMs: 6000 };
    const c = node("a", { resident: false, sizeGb: 20, memory: { freeGb: 5, modelsFree: 3, evictable: [{ name: "m3", sizeGb: 3, reloadMs: 0, busyMs: 0 }, busy] } });
    // The idle one goes first (Ollama's order), then the busy one once its requests end: 6 s, then the load.
    expect(estimateFinish(c, req)).toMatchObject({ ms: 6000 + 5000 + 2 * EVICT_MS + 2000 + 10000, evicts: ["m3", "m20"], breakdown: { memory_wait_ms: 6000, reload_evicted_ms: 8000 } });
  });

  test("the requests ahead are taken to be of the queue's mean prompt: a short request behind a long one waits for its prefill", () => {
    // One running for 0 s, its prompt 9000 tokens (9 × this request's): 18 s prefill + 10 s decode ahead, not 2 s + 10 s.
    const c = node("a", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0, promptTokens: 9000 } });
    expect(estimateFinish(c, req)).toMatchObject({ breakdown: { wait_ms: 18000 + 10000 } });
    expect(estimateFinish({ ...c, queue: { ...c.queue, promptTokens: undefined } }, req)).toMatchObject({ breakdown: { wait_ms: 2000 + 10000 } });
  });

  test("what is left of a request: the rest of its expected time, or once past it as long again as it is late", () => {
    expect(leftOfMs(3000, 1000)).toBe(2000);
    expect(leftOfMs(3000, 3000)).toBe(0);
    expect(leftOfMs(3000, 5000)).toBe(2000);
  });

  test("a node that holds as many models as Ollama loads at once unloads one first, room or not, or none can load there", () => {
    const evictable = [{ name: "m3", sizeGb: 3, reloadMs: 4000, busyMs: 0 }];
    const full = node("full", { resident: false, memory: { freeGb: null, modelsFree: 0, evictable } });
    expect(estimateFinish(full, req)).toMatchObject({ evicts: ["m3"], breakdown: { evict_ms: EVICT_MS, reload_evicted_ms: 4000 } });
    expect(estimateFinish({ ...full, memory: { ...full.memory!, modelsFree: 1 } }, req)).toMatchObject({ evicts: [] });
    expect(estimateFinish({ ...full, memory: { ...full.memory!, evictable: [] } }, req)).toEqual({ excluded: "the node holds as many models as Ollama loads at once, none of them free to unload" });
  });

  test("a load waits for the loads sent to the node before it, one at a time; a model loaded there does not", () => {
    const behind = estimateFinish(node("a", { resident: false, loadsAheadMs: 7000, memory: { freeGb: 64, modelsFree: 1, evictable: [] } }), req);
    expect(behind).toMatchObject({ ms: 7000 + 5000 + 2000 + 10000, breakdown: { loads_ahead_ms: 7000, load_ms: 5000 } });
    const loaded = estimateFinish(node("a", { loadsAheadMs: 7000 }), req);
    expect(loaded).toMatchObject({ ms: 2000 + 10000 });
    expect("breakdown" in loaded && loaded.breakdown.loads_ahead_ms).toBeUndefined();
  });

  test("the request running there is partly done: the wait is what is left of it", () => {
    const c = node("a", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, runningForMs: 9000 });
    // One ahead of 2 s prefill + 10 s decode, 9 s of it gone.
    expect(estimateFinish(c, req)).toMatchObject({ breakdown: { wait_ms: 3000 } });
  });

  test("a request running past its expected time is expected to run as long again as it is late: the wait behind it grows", () => {
    const late = (runningForMs: number) => estimateFinish(node("a", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, runningForMs }), req);
    // 12 s expected; at 20 s it is 8 s late, so 8 s more are expected; at 40 s, 28 s more.
    expect(late(20000)).toMatchObject({ breakdown: { wait_ms: 8000 } });
    expect(late(40000)).toMatchObject({ breakdown: { wait_ms: 28000 } });
  });

  test("while the model loads there, a request behind the one that loads it waits for the rest of the load too", () => {
    // Its load takes 5 s, 2 s of it gone: 3 s left, then the request ahead (2 s prefill + 10 s decode) whole.
    const c = node("a", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, runningForMs: 2000, loading: true });
    expect(estimateFinish(c, req)).toMatchObject({ breakdown: { wait_ms: 3000 + 12000 } });
    // With a slot free, only the load.
    expect(estimateFinish({ ...c, slots: 2 }, req)).toMatchObject({ breakdown: { wait_ms: 3000 } });
    // A load herd sent to wait for room first: what herd expects left of it, the request ahead not begun.
    expect(estimateFinish({ ...c, runningForMs: 8000, loadLeftMs: 9000 }, req)).toMatchObject({ breakdown: { wait_ms: 9000 + 12000 } });
  });

  test("a stream ranks by its first token and half its decode: a slower node that starts now beats a faster one's queue", () => {
    const fastBusy = node("fast", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, speed: { decodeTps: 40, prefillTps: 1000, loadMs: 2000 } });
    const slowIdle = node("slow", { speed: { decodeTps: 16, prefillTps: 350, loadMs: 5000 } });
    // fast: 6 s wait + 1 s prefill + 5 s decode = 12 s, a stream's cost 9.5 s; slow: 2.9 s prefill + 12.5 s decode =
    // 15.4 s, a stream's cost 9.1 s (its first token at 2.9 s, not 7 s).
    expect(order([fastBusy, slowIdle])).toEqual(["fast", "slow"]);
    expect(order([fastBusy, slowIdle], { ...req, stream: true })).toEqual(["slow", "fast"]);
  });

  test("with explore, a node whose speed is not learned comes first where it costs at most 1.5× the best", () => {
    const known = node("known", { speedKnown: true, speed: { decodeTps: 40, prefillTps: 1000, loadMs: 2000 } });
    const fresh = node("fresh", { speedKnown: false });
    const coldFresh = node("cold", { speedKnown: false, resident: false, speed: { decodeTps: 60, prefillTps: 2000, loadMs: 100 } });
    expect(order([known, coldFresh], { ...req, explore: true })[0]).toBe("known"); // exploring costs no load
    const far = node("far", { speedKnown: false, speed: { decodeTps: 5, prefillTps: 100, loadMs: 5000 } });
    expect(order([known, fresh, far])).toEqual(["known", "fresh", "far"]);
    // known: 1 s + 5 s; fresh: 2 s + 10 s = 2×: too dear to explore; a closer one is.
    expect(order([known, fresh, far], { ...req, explore: true })[0]).toBe("known");
    const close = node("close", { speedKnown: false, speed: { decodeTps: 30, prefillTps: 800, loadMs: 2000 } });
    expect(order([known, close], { ...req, explore: true })).toEqual(["close", "known"]);
  });

  test("with explore, a node whose prior is held below the fleet's is judged at the best herd hopes of it", () => {
    const known = node("known", { speedKnown: true, speed: { decodeTps: 40, prefillTps: 1000, loadMs: 2000 } });
    // Taken as half as fast (2×: too dear to explore), but it may be as fast as known.
    const held = node("held", { speedKnown: false, speed: { decodeTps: 20, prefillTps: 500, loadMs: 2000, atBest: { decodeTps: 40, prefillTps: 1000 } } });
    expect(order([known, held])).toEqual(["known", "held"]);
    expect(order([known, held], { ...req, explore: true })).toEqual(["held", "known"]);
  });

  test("near-ties go to the node dispatched to least recently, so equal nodes share the load", () => {
    const a = node("a", { queue: { pending: 0, inFlight: 0, lastDispatchAt: 2000 } });
    const b = node("b", { queue: { pending: 0, inFlight: 0, lastDispatchAt: 1000 }, speed: { decodeTps: 19.5, prefillTps: 500, loadMs: 5000 } });
    expect(order([a, b])).toEqual(["b", "a"]);
    const c = node("c", { queue: { pending: 0, inFlight: 0, lastDispatchAt: 1000 }, speed: { decodeTps: 10, prefillTps: 500, loadMs: 5000 } });
    expect(order([a, c])).toEqual(["a", "c"]); // twice as slow is no tie
  });

  test("among nodes never dispatched to, the tie goes to the one with more slots, not the first by name", () => {
    const cold = (id: string, slots: number) => node(id, { resident: false, slots });
    expect(order([cold("air", 1), cold("studio", 4), cold("mini", 2)])[0]).toBe("studio");
  });

  test("among nodes herd knows nothing of, with the same slots, the tie goes to the bigger machine, not the first by name", () => {
    const cold = { resident: false, slots: 4 };
    expect(order([node("a-small", { ...cold, evidentMemoryGb: 12.6 }), node("z-big", { ...cold, evidentMemoryGb: 20 })])[0]).toBe("z-big");
  });

  test("a node that has the model keeps it until the wait there is longer than the whole request elsewhere, load and the reloads it causes included", () => {
    const idle = node("hot"); // 12 s
    const fastCold = node("cold", { resident: false, speed: { decodeTps: 40, prefillTps: 1000, loadMs: 3000 } }); // 9 s
    expect(order([idle, fastCold])).toEqual(["hot", "cold"]); // no queue to save: the model stays where it is
    const busy = node("hot", { queue: { pending: 1, inFlight: 1, lastDispatchAt: 0 } }); // 24 s ahead + 12 s
    const cold = node("cold", { resident: false, speed: { decodeTps: 20, prefillTps: 500, loadMs: 12000 } }); // 24 s
    expect(order([busy, cold])).toEqual(["hot", "cold"]); // sooner by 12 s, but the wait (24 s) is not 1 s past its whole
    expect(order([busy, fastCold])).toEqual(["cold", "hot"]); // 24 s of wait against 9 s
    // Loading there evicts a model asked for lately, whose next request pays its 16 s load: 24 s is not 1 s past 9 + 16.
    const evicting = node("cold", { ...fastCold, memory: { freeGb: 0, modelsFree: 1, evictable: [{ name: "used", sizeGb: 20, reloadMs: 16000, busyMs: 0 }] } });
    expect(order([busy, evicting])).toEqual(["hot", "cold"]);
  });

  test("a prefix the node holds cached is not prefilled again (session affinity's input)", () => {
    const cached = node("cached", { cachedPrefixTokens: 1000, queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 }, slots: 1, speed: { decodeTps: 20, prefillTps: 100, loadMs: 0 } });
    expect(estimateFinish(cached, { promptTokens: 1000, outputTokens: 10, typicalOutputTokens: 10 })).toMatchObject({ breakdown: { prefill_ms: 0 } });
  });
});

describe("a reload for context (the model loaded there with a context this request outgrows)", () => {
  // 2 s of prefill and 1 s of decode: 3 s wherever the runner fits it.
  const short: FinishRequest = { promptTokens: 1000, outputTokens: 20, typicalOutputTokens: 20 };

  test("costs the load again, after every request on the runner has finished, and loses the cached prefix", () => {
    const c = node("a", { reloadsRunner: true, slots: 2, queue: { pending: 1, inFlight: 2, lastDispatchAt: 0 }, cachedPrefixTokens: 500 });
    // All three ahead finish first, two at a time (two rounds of 12 s); then the 5 s load and the whole prompt's 2 s.
    const e = estimateFinish(c, req);
    expect(e).toMatchObject({ ms: 24000 + 5000 + 2000 + 10000, breakdown: { wait_ms: 24000, load_ms: 0, reload_ms: 5000, prefill_ms: 2000, decode_ms: 10000 } });
    expect("breakdown" in e && e.breakdown.cached_tokens).toBeUndefined();
  });

  test("a node whose runner is too small, even holding the session's prefix, loses to one big enough when the reload outweighs the wait", () => {
    const reloads = node("reloads", { reloadsRunner: true, cachedPrefixTokens: 1000 }); // 5 s load + 3 s
    const fits = node("fits", { queue: { pending: 0, inFlight: 1, lastDispatchAt: 0 } }); // 3 s ahead + 3 s
    expect(order([reloads, fits], short)).toEqual(["fits", "reloads"]);
  });

  test("and wins when the other's queue is longer", () => {
    const reloads = node("reloads", { reloadsRunner: true, cachedPrefixTokens: 1000 }); // 8 s
    const fits = node("fits", { queue: { pending: 2, inFlight: 1, lastDispatchAt: 0 } }); // 9 s ahead + 3 s
    expect(order([fits, reloads], short)).toEqual(["reloads", "fits"]);
  });
});
