import { describe, expect, test } from "bun:test";
import { PromptCounts } from "../fleet/prompt-counts.ts";
import { Queues } from "../fleet/queues.ts";
import { eligibleNodes, type NodeView } from "../fleet/scorer.ts";
import { nodeView, quietly, testFleet } from "../fleet/test-fixtures.ts";
import { byFinishTime, DEFAULT_REPLY_TOKENS } from "./finish-order.ts";

const MODEL = "qwen3:8b";
const OTHER = "llama3.2:3b";
/** Every node decodes 100 tokens/s, prefills 1000 and loads in 2 s; `typical`: the model's usual reply. */
const speeds = (typical: number | null = null) => ({
  predict: () => ({ decodeTps: 100, prefillTps: 1000, loadMs: 2000, source: "prior" as const, sources: { decode: "prior" as const, prefill: "prior" as const, load: "prior" as const }, fresh: true }),
  typicalReply: () => typical,
});
/** Each model's weights' blob, as /api/show's modelfile names it (none learned by default). */
const blobs = new Map<string, string>();
/** Each model's trained context, as /api/show said it (none by default). */
const trainedContexts = new Map<string, number>();
const chat = (numPredict?: number) => ({ kind: "chat" as const, promptTokens: 500, options: numPredict === undefined ? {} : { num_predict: numPredict } });

function rank(nodes: NodeView[], req: Parameters<typeof byFinishTime>[2] = chat(), typical: number | null = null, queues = new Queues(), cached?: (nodeId: string) => number, promptCounts = new PromptCounts()) {
  const { registry, config } = testFleet(nodes.map((n) => ({ id: n.id, parallel: 2 })));
  const { eligible } = eligibleNodes(nodes, { model: MODEL, promptTokens: req.promptTokens });
  return quietly(() => byFinishTime({ config, registry, queues, speeds: speeds(typical), exploreTurns: { due: () => false }, modelFacts: { answeredOf: (m: string) => ({ capabilities: [], contextLength: trainedContexts.get(m) ?? null, blob: blobs.get(m) ?? null }) }, promptCounts }, eligible, req, cached));
}

const cold = (id: string, over: Partial<NodeView> = {}) => nodeView(id, { available: [{ name: MODEL, sizeGb: 20 }], ...over });

test("the reply's cap sets the decode, else the model's usual reply, else the default", () => {
  const decode = (req: ReturnType<typeof chat>, typical: number | null) => rank([cold("a")], req, typical)[0]!.prediction.breakdown.decode_ms;
  expect(decode(chat(50), 300)).toBe(500);
  expect(decode(chat(), 300)).toBe(3000);
  expect(decode(chat(-1), null)).toBe(DEFAULT_REPLY_TOKENS * 10);
});

test("each candidate's prediction is its estimate in ms and its parts; its score the points of it, 100 less the % each delay takes", () => {
  const [only] = rank([cold("a")], chat(100));
  expect(only).toMatchObject({ nodeId: "a", prediction: { ms: 2000 + 500 + 1000, breakdown: { wait_ms: 0, load_ms: 2000, evict_ms: 0, prefill_ms: 500, decode_ms: 1000 } } });
  // The load is 2000 of its 3500 ms: 57.1% of the estimate.
  expect(only).toMatchObject({ score: 43, breakdown: { model_thermal: -57.1, memory_fit: 0, queue_depth: 0, wait_time: 0, role_affinity: 0 } });
  // Loaded, idle and the only node: nothing in its way, full marks.
  const hot = nodeView("b", { available: [{ name: MODEL, sizeGb: 20 }], loaded: [{ name: MODEL, sizeGb: 20 }] });
  expect(rank([hot], chat(100))[0]).toMatchObject({ score: 100, breakdown: { model_thermal: 0, role_affinity: 0 } });
});

test("a node that must wait scores below one that need not, the wait split between the requests queued and running there", async () => {
  const queues = new Queues();
  // Two slots, both busy, one more queued: the wait is behind one queued and two running requests.
  const running = [await queues.acquire("busy", MODEL, 2, 1000), await queues.acquire("busy", MODEL, 2, 1000)];
  const gone = new AbortController();
  const queued = Promise.resolve(queues.acquire("busy", MODEL, 2, 1000, gone.signal)).catch(() => null);
  const loaded = (id: string) => cold(id, { loaded: [{ name: MODEL, sizeGb: 20 }] });
  const [idle, busy] = rank([loaded("idle"), loaded("busy")], chat(100), null, queues);
  gone.abort();
  await queued;
  for (const slot of running) slot.release("completed");
  expect([idle!.nodeId, busy!.nodeId]).toEqual(["idle", "busy"]);
  expect(idle!.score).toBeGreaterThan(busy!.score);
  const { wait_ms } = busy!.prediction.breakdown;
  expect(wait_ms).toBeGreaterThan(0);
  const b = busy!.breakdown;
  expect(b.queue_depth * 2).toBeCloseTo(b.wait_time, 0);
  expect(100 + b.model_thermal + b.memory_fit + b.queue_depth + b.wait_time + b.role_affinity).toBeCloseTo(busy!.score, 0);
});

test("memory: an agent's free memory, else the declared memory less the OS's share and the loaded models; idle models may be evicted, busy ones once their requests end", async () => {
  const loaded = [{ name: OTHER, sizeGb: 10 }];
  // Declared 40 GB (agentless): 40 - 6 - 10 = 24 GB free, room for 20 GB.
  expect(rank([cold("a", { memoryTotalGb: 40, memoryAvailableGb: null, loaded })])[0]!.prediction.breakdown.evict_ms).toBe(0);
  // Declared 32 GB: 16 GB free, so the idle model goes first.
  expect(rank([cold("a", { memoryTotalGb: 32, memoryAvailableGb: null, loaded })])[0]!.prediction.breakdown.evict_ms).toBe(500);
  // The agent says 14 GB free; the loaded model is busy: the load waits for its request to end (its 256-token reply at
  // 100 tokens/s), and its next request will need a load: the node that has room wins.
  const queues = new Queues();
  await queues.acquire("busy", OTHER, 1, 1000);
  const ranked = rank([cold("busy", { memoryTotalGb: 32, memoryAvailableGb: 14, loaded }), cold("roomy", { memoryTotalGb: 64, memoryAvailableGb: 40 })], chat(), null, queues);
  expect(ranked.map((c) => c.nodeId)).toEqual(["roomy", "busy"]);
  expect(ranked[1]!.prediction.breakdown).toMatchObject({ evict_ms: 500, reload_evicted_ms: 2000 });
  expect(ranked[1]!.prediction.breakdown.memory_wait_ms).toBeGreaterThan(2000);
  expect(ranked[1]!.evicts).toEqual([OTHER]);
});

test("the idle models go in the order Ollama unloads them, by their weights' blob, not the least recently used first", async () => {
  const loaded = [{ name: "a:1b", sizeGb: 10 }, { name: "b:1b", sizeGb: 10 }, { name: "c:1b", sizeGb: 10 }];
  const queues = new Queues();
  // b was used last, so least recently used would take a then c; its blob comes first.
  for (const m of ["a:1b", "c:1b", "b:1b"]) {
    (await queues.acquire("n", m, 1, 1000)).release("completed");
    await Bun.sleep(5); // a clock tick apart
  }
  const evicts = () => rank([cold("n", { memoryTotalGb: 64, memoryAvailableGb: 5, loaded })], chat(), null, queues)[0]!.evicts;
  expect(evicts()).toEqual(["a:1b", "c:1b"]); // no blob learned yet: least recently used
  blobs.set("a:1b", "sha256-cc").set("b:1b", "sha256-aa").set("c:1b", "sha256-bb");
  try {
    expect(evicts()).toEqual(["b:1b", "c:1b"]);
  } finally {
    blobs.clear();
  }
});

test("a load is sized at the trained context an earlier /api/show said, not the node's bigger default, though the request did not wait for it", () => {
  const big = (over: Partial<NodeView> = {}) => cold("a", { memoryTotalGb: 64, memoryAvailableGb: 30, defaultContext: 262144, ...over });
  // 20 GB of weights: at 262144 tokens the cache alone is past the 30 GB free, so the load evicts what is loaded.
  const loaded = [{ name: OTHER, sizeGb: 10 }];
  expect(rank([big({ loaded })])[0]!.evicts).toEqual([OTHER]);
  trainedContexts.set(MODEL, 8192);
  try {
    expect(rank([big({ loaded })])[0]!.evicts).toEqual([]);
  } finally {
    trainedContexts.clear();
  }
});

test("a node whose every loaded model would have to go, and still short by herd's count, is not left out: it evicts them all", async () => {
  const [only] = rank([cold("a", { memoryTotalGb: 64, memoryAvailableGb: 2, loaded: [{ name: OTHER, sizeGb: 3 }] })]);
  expect(only!.evicts).toEqual([OTHER]);
  // Nor when three models run there that herd took for evicted: its count of models is short, not the node's.
  const queues = new Queues();
  for (const m of ["x:1b", "y:1b", "z:1b"]) await queues.acquire("a", m, 1, 1000);
  const ranked = rank([cold("a", { memoryTotalGb: 64, memoryAvailableGb: 40 }), cold("b", { memoryTotalGb: 64, memoryAvailableGb: 40 })], chat(), null, queues);
  expect(ranked.map((c) => c.nodeId).sort()).toEqual(["a", "b"]);
});

test("evicting a busy model costs a reload for each request waiting for it there", async () => {
  const queues = new Queues();
  await queues.acquire("a", OTHER, 1, 1000);
  for (let i = 0; i < 3; i++) (queues.acquire("a", OTHER, 1, 50) as Promise<unknown>).catch(() => {}); // three waiting
  const [only] = rank([cold("a", { memoryTotalGb: 32, memoryAvailableGb: 14, loaded: [{ name: OTHER, sizeGb: 10 }] })], chat(), null, queues);
  expect(only!.prediction.breakdown.reload_evicted_ms).toBe(3 * 2000);
});

test("a node of unknown memory that holds three models unloads one for a fourth (OLLAMA_MAX_LOADED_MODELS)", () => {
  const three = [{ name: "a:1b", sizeGb: 1 }, { name: "b:1b", sizeGb: 1 }, { name: "c:1b", sizeGb: 1 }];
  const [only] = rank([cold("n", { memoryTotalGb: null, memoryAvailableGb: null, loaded: three })]);
  expect(only!.prediction.breakdown.evict_ms).toBe(500);
  expect(only!.evicts).toHaveLength(1);
  expect(rank([cold("n", { memoryTotalGb: null, memoryAvailableGb: null, loaded: three.slice(1) })])[0]!.evicts).toEqual([]);
});

test("a node of unknown memory that has unloaded a model for room has what it evidently held: the most its loaded models took together, or its biggest model on disk", () => {
  const unknown = { memoryTotalGb: null, memoryAvailableGb: null, loaded: [{ name: OTHER, sizeGb: 10 }], unloadedForRoom: true };
  const load = (over: Partial<NodeView>) => rank([cold("n", { ...unknown, ...over })])[0]!;
  // 20 GB of weights beside 10 GB loaded: a node that once held 40 GB of models has room.
  expect(load({ memoryShownGb: 40 }).evicts).toEqual([]);
  // One that never held more than 25 GB, nor has a bigger model on disk, must evict the loaded one first.
  expect(load({ memoryShownGb: 25 })).toMatchObject({ evicts: [OTHER], prediction: { breakdown: { evict_ms: 500 } } });
  // Its biggest model on disk, 40 GB, it can hold: room beside the 10 GB.
  expect(load({ memoryShownGb: 10, available: [{ name: MODEL, sizeGb: 20 }, { name: "big:70b", sizeGb: 40 }] }).evicts).toEqual([]);
  // Before it has unloaded one for room, only its count of models is known: nothing to evict.
  expect(load({ memoryShownGb: 25, unloadedForRoom: false }).evicts).toEqual([]);
});

test("a node:model with a request running counts as resident (loaded or loading) before the next report says so", async () => {
  const queues = new Queues();
  await queues.acquire("a", MODEL, 2, 1000);
  expect(rank([cold("a")], chat(), null, queues)[0]!.prediction.breakdown.load_ms).toBe(0);
});

test("a model loading there (its request runs, not reported yet) takes its room, and a load that needs that room evicts it once its request ends", async () => {
  const queues = new Queues();
  await queues.acquire("a", OTHER, 1, 1000);
  const [only] = rank([cold("a", { memoryTotalGb: 32, memoryAvailableGb: 14, available: [{ name: MODEL, sizeGb: 12 }, { name: OTHER, sizeGb: 10 }] })], chat(), null, queues);
  expect(only!.evicts).toEqual([OTHER]);
  expect(only!.prediction.breakdown.memory_wait_ms).toBeGreaterThan(0);
});

test("a model a load herd sent there evicts is not resident though its request still runs: a request of it is priced at its load again", async () => {
  const queues = new Queues();
  await queues.acquire("a", MODEL, 2, 1000);
  queues.loads.begin("a", { model: "gemma3:12b", waitMs: 3000, loadMs: 2000, evicts: [MODEL] });
  const [only] = rank([cold("a", { loaded: [{ name: MODEL, sizeGb: 20 }] })], chat(), null, queues);
  expect(only!.prediction.breakdown.load_ms).toBe(2000);
  expect(only!.prediction.breakdown.loads_ahead_ms).toBeGreaterThan(4000);
});

describe("session affinity", () => {
  const hot = (id: string) => nodeView(id, { available: [{ name: MODEL, sizeGb: 5 }], loaded: [{ name: MODEL, sizeGb: 5, contextLength: 8192 }] });
  // A later agent turn: 6,000 prompt tokens, 5,000 of them cached on "last" (the node of the session's last turn).
  const turn = { kind: "chat" as const, promptTokens: 6000, options: { num_predict: 100 } };
  const onLast = (id: string) => (id === "last" ? 5000 : 0);

  test("the node holding the prefix wins when the prefill saved outweighs its wait, and says so in the breakdown", async () => {
    const queues = new Queues();
    await queues.acquire("last", MODEL, 2, 1000); // one of its two slots busy: no wait
    const [first] = rank([hot("other"), hot("last")], turn, 100, queues, onLast);
    expect(first).toMatchObject({ nodeId: "last", prediction: { breakdown: { wait_ms: 0, prefill_ms: 1000, cached_tokens: 5000 } } });
    // Without affinity the idle node wins.
    expect(rank([hot("other"), hot("last")], turn, 100, queues)[0]!.nodeId).toBe("other");
  });

  test("but not when its queue is long: the wait costs more than the prefill saved", async () => {
    const queues = new Queues();
    for (let i = 0; i < 4; i++) void queues.acquire("last", MODEL, 2, 60_000, undefined, undefined, turn.promptTokens); // turns like this one
    const ranked = rank([hot("other"), hot("last")], turn, 100, queues, onLast);
    expect(ranked.map((c) => c.nodeId)).toEqual(["other", "last"]);
    expect(ranked[0]!.prediction.breakdown.cached_tokens).toBeUndefined();
  });
});

describe("a reload for context", () => {
  const loadedAt = (id: string, contextLength: number) => nodeView(id, { available: [{ name: MODEL, sizeGb: 5 }], loaded: [{ name: MODEL, sizeGb: 5, contextLength }] });
  // 6,000 prompt tokens and room for a 100-token reply outgrow a 4096 runner (herd would send num_ctx 8192), not a 16384 one.
  const long = { kind: "chat" as const, promptTokens: 6000, options: { num_predict: 100 } };

  test("the node loaded at too small a context pays the load again and keeps no cached prefix: the one loaded big enough wins", () => {
    const onSmall = (id: string) => (id === "a-small" ? 5000 : 0); // the session's last turn was there
    const ranked = rank([loadedAt("a-small", 4096), loadedAt("b-big", 16384)], long, 100, new Queues(), onSmall);
    expect(ranked.map((c) => c.nodeId)).toEqual(["b-big", "a-small"]);
    expect(ranked[1]!.prediction.breakdown).toMatchObject({ load_ms: 0, reload_ms: 2000, prefill_ms: 6000 });
    expect(ranked[1]!.prediction.breakdown.cached_tokens).toBeUndefined();
    expect(ranked[0]!.prediction.breakdown.reload_ms).toBe(0);
  });

  test("by the dispatcher's rule: a prompt that fits, or a client's num_ctx the runner already fits, is no reload; a prompt that outgrows it, or a bigger num_ctx, is", () => {
    const reloadMs = (req: Parameters<typeof byFinishTime>[2]) => rank([loadedAt("a", 4096)], req)[0]!.prediction.breakdown.reload_ms;
    expect(reloadMs(chat(100))).toBe(0);
    expect(reloadMs({ kind: "chat", promptTokens: 500, options: { num_ctx: 2048 } })).toBe(0); // stripped: the runner fits it
    expect(reloadMs(long)).toBe(2000);
    expect(reloadMs({ kind: "chat", promptTokens: 500, options: { num_ctx: 16384 } })).toBe(2000);
  });

  test("a prompt herd's estimate says outgrows the runner, but the model's own count says fits, is no reload", () => {
    const estimated = { kind: "chat" as const, promptTokens: 3637, options: {} };
    const counts = new PromptCounts();
    expect(rank([loadedAt("a", 4096)], estimated, null, new Queues(), undefined, counts)[0]!.prediction.breakdown.reload_ms).toBe(2000);
    counts.observe(MODEL, 3637, 2406, 4096);
    expect(rank([loadedAt("a", 4096)], estimated, null, new Queues(), undefined, counts)[0]!.prediction.breakdown.reload_ms).toBe(0);
  });
});
