import { expect, test } from "bun:test";
import { eligibleNodes, type NodeView, type QueueView, type ScoreRequest, scoreEligible } from "./scorer.ts";
import { nodeView, testConfig } from "./test-fixtures.ts";

const MODEL = "qwen3:8b";
/** The default weights: hot 50, warm 30, cold 10, memoryFit 20, queueDepth -30, waitTime -25, roleAffinity 15, availability 10, contextFit 15. */
const scoring = testConfig().scoring;
const idle: QueueView = { pending: 0, inFlight: 0, concurrency: 4, avgLatencyMs: 5000, lastDispatchAt: 0, promptTokens: 0 };
const hot = (sizeGb = 5, contextLength?: number) => ({ loaded: [{ name: MODEL, sizeGb, contextLength }], available: [{ name: MODEL, sizeGb }] });
const cold = (sizeGb = 5) => ({ available: [{ name: MODEL, sizeGb }] });

function score(nodes: NodeView[], queues: Record<string, Partial<QueueView>> = {}, req: Partial<ScoreRequest> = {}, weights = scoring) {
  const { eligible, eliminated } = eligibleNodes(nodes, { model: MODEL, promptTokens: 100, ...req });
  return { ranked: scoreEligible(nodes, eligible, (id) => ({ ...idle, ...queues[id] }), weights), eliminated };
}

function only(node: NodeView, queue: Partial<QueueView> = {}, req: Partial<ScoreRequest> = {}) {
  const { ranked } = score([node], { [node.id]: queue }, req);
  expect(ranked).toHaveLength(1);
  return ranked[0]!;
}

const order = (result: ReturnType<typeof score>) => result.ranked.map((s) => s.nodeId);

test("a node with the model loaded (hot) beats one that just unloaded it (warm), which beats one with it only on disk (cold)", () => {
  const result = score([nodeView("disk", cold()), nodeView("warm", { ...cold(), recentlyLoaded: [MODEL] }), nodeView("hot", hot())]);
  expect(order(result)).toEqual(["hot", "warm", "disk"]);
  expect(result.ranked.map((s) => s.breakdown.model_thermal)).toEqual([50, 30, 10]);
  expect(result.ranked.map((s) => s.loaded)).toEqual([true, false, false]);
});

test("the model is found whatever the spelling of its name: case and an omitted :latest tag do not matter", () => {
  const node = nodeView("a", { loaded: [{ name: "Llama3.2:latest", sizeGb: 2 }] });
  expect(score([node], {}, { model: "llama3.2" }).ranked[0]!.loaded).toBe(true);
  const warm = nodeView("b", { available: [{ name: "llama3.2:latest", sizeGb: 2 }], recentlyLoaded: ["LLAMA3.2"] });
  expect(score([warm], {}, { model: "llama3.2:latest" }).ranked[0]!.breakdown.model_thermal).toBe(30);
});

test("offline and draining nodes, nodes without the model and nodes too small to ever hold it are eliminated, each with its reason", () => {
  const result = score([
    nodeView("down", { ...hot(), online: false }),
    nodeView("leaving", { ...hot(), draining: true }),
    nodeView("empty"),
    nodeView("small", { ...cold(30), memoryTotalGb: 32 }),
    nodeView("ok", cold()),
  ]);
  expect(order(result)).toEqual(["ok"]);
  expect(result.eliminated).toEqual([
    { nodeId: "down", reason: "offline" },
    { nodeId: "leaving", reason: "draining" },
    { nodeId: "empty", reason: "model not on this node" },
    { nodeId: "small", reason: "model needs 30 GB; node has 32 GB less a 6 GB OS reserve" },
  ]);
});

test("the size check leaves 6 GB to the OS, and spares a model already loaded and a node that does not report its memory", () => {
  expect(score([nodeView("edge", { ...cold(26), memoryTotalGb: 32 })]).ranked).toHaveLength(1);
  expect(score([nodeView("over", { ...cold(26.1), memoryTotalGb: 32 })]).ranked).toHaveLength(0);
  expect(score([nodeView("resident", { ...hot(40), memoryTotalGb: 32 })]).ranked).toHaveLength(1);
  expect(score([nodeView("agentless", { ...cold(200), memoryTotalGb: null, memoryAvailableGb: null })]).ranked).toHaveLength(1);
});

test("a cold load's memory fit is what stays free after loading: full with half the node spare, none when Ollama must evict, half when memory is unknown", () => {
  expect(only(nodeView("roomy", { ...cold(10), memoryTotalGb: 64, memoryAvailableGb: 42 })).breakdown.memory_fit).toBe(20);
  expect(only(nodeView("tight", { ...cold(10), memoryTotalGb: 64, memoryAvailableGb: 18 })).breakdown.memory_fit).toBe(5); // 8 of 32 GB left
  expect(only(nodeView("full", { ...cold(10), memoryTotalGb: 64, memoryAvailableGb: 8 })).breakdown.memory_fit).toBe(0);
  expect(only(nodeView("agentless", { ...cold(10), memoryTotalGb: null, memoryAvailableGb: null })).breakdown.memory_fit).toBe(10);
  expect(only(nodeView("loaded", { ...hot(10), memoryAvailableGb: 0 })).breakdown.memory_fit).toBe(20);
});

test("each request waiting or running costs 6 points, up to the queue-depth weight", () => {
  expect(only(nodeView("a", hot()), { inFlight: 2 }).breakdown.queue_depth).toBe(-12);
  expect(only(nodeView("a", hot()), { inFlight: 4, pending: 1 }).breakdown.queue_depth).toBe(-30);
  expect(only(nodeView("a", hot()), { inFlight: 4, pending: 20 }).breakdown.queue_depth).toBe(-30);
});

test("a node with twice the median bandwidth counts its queue as half as long, unless normalizeQueueByBandwidth is off", () => {
  const nodes = [nodeView("fast", { ...hot(), bandwidthGbps: 800 }), nodeView("mid", { ...hot(), bandwidthGbps: 400 }), nodeView("slow", { ...hot(), bandwidthGbps: 200 })];
  const busy = { fast: { inFlight: 2 }, mid: { inFlight: 2 }, slow: { inFlight: 2 } };
  const depth = (weights = scoring) => Object.fromEntries(score(nodes, busy, {}, weights).ranked.map((s) => [s.nodeId, s.breakdown.queue_depth]));
  expect(depth()).toEqual({ fast: -6, mid: -12, slow: -24 });
  expect(depth({ ...scoring, normalizeQueueByBandwidth: false })).toEqual({ fast: -12, mid: -12, slow: -12 });
});

test("the wait penalty grows with the estimated wait for a slot and takes the whole weight at 30 s", () => {
  const wait = (queue: Partial<QueueView>) => only(nodeView("a", hot()), queue);
  expect(wait({ inFlight: 3, concurrency: 4 }).estimatedWaitMs).toBe(0); // a slot is free
  const full = wait({ inFlight: 1, concurrency: 1, pending: 2, avgLatencyMs: 5000 }); // two ahead, one running
  expect(full.estimatedWaitMs).toBe(15_000);
  expect(full.breakdown.wait_time).toBe(-12.5);
  expect(wait({ inFlight: 4, concurrency: 4, pending: 3, avgLatencyMs: 8000 }).estimatedWaitMs).toBe(8000); // four slots share the work
  expect(wait({ inFlight: 1, concurrency: 1, pending: 50, avgLatencyMs: 5000 }).breakdown.wait_time).toBe(-25);
});

test("a large model prefers the fastest node, a small one the slower nodes, a medium one does not mind", () => {
  const fleet = (sizeGb: number) => [nodeView("fast", { ...cold(sizeGb), bandwidthGbps: 800, memoryTotalGb: 192, memoryAvailableGb: 180 }), nodeView("slow", { ...cold(sizeGb), bandwidthGbps: 200, memoryTotalGb: 192, memoryAvailableGb: 180 })];
  const affinity = (sizeGb: number) => Object.fromEntries(score(fleet(sizeGb)).ranked.map((s) => [s.nodeId, s.breakdown.role_affinity]));
  expect(affinity(40)).toEqual({ fast: 15, slow: 3.8 });
  expect(affinity(4)).toEqual({ fast: 7.5, slow: 13.1 });
  expect(affinity(12)).toEqual({ fast: 7.5, slow: 7.5 });
});

test("an offline node's bandwidth is no reference: the fastest online node takes the whole affinity", () => {
  const fast = nodeView("fast", { ...cold(30), bandwidthGbps: 400, memoryTotalGb: 192, memoryAvailableGb: 180 });
  const gone = nodeView("gone", { ...cold(30), bandwidthGbps: 800, online: false });
  expect(score([fast, gone]).ranked[0]!.breakdown.role_affinity).toBe(15);
});

test("without bandwidth (or with bandwidthAware off) a node's memory tier stands for its speed", () => {
  const big = (memoryTotalGb: number | null) => only(nodeView("n", { ...hot(30), memoryTotalGb, memoryAvailableGb: memoryTotalGb })).breakdown.role_affinity;
  expect([big(128), big(64), big(32), big(16), big(null)]).toEqual([15, 11.3, 7.5, 3.8, 7.5]);
  const node = nodeView("n", { ...hot(30), bandwidthGbps: 100, memoryTotalGb: 64 });
  expect(score([node], {}, {}, { ...scoring, bandwidthAware: false }).ranked[0]!.breakdown.role_affinity).toBe(11.3);
});

test("a node earns its availability bonus over its first 10 minutes online", () => {
  const availability = (onlineForS: number) => only(nodeView("n", { ...hot(), onlineForS })).breakdown.availability;
  expect([availability(0), availability(300), availability(600), availability(86_400)]).toEqual([0, 5, 10, 10]);
});

test("a prompt larger than the loaded context window loses the context-fit bonus and is reported as an overflow", () => {
  const over = only(nodeView("n", hot(5, 4096)), {}, { promptTokens: 5000 });
  expect(over.breakdown.context_fit).toBe(0);
  expect(over.contextOverflow).toEqual({ estimated: 5000, contextLength: 4096 });
  const fits = only(nodeView("n", hot(5, 8192)), {}, { promptTokens: 5000 });
  expect([fits.breakdown.context_fit, fits.contextOverflow]).toEqual([15, null]);
  // Nothing loaded (or a context not reported): nothing to overflow yet.
  expect(only(nodeView("n", cold()), {}, { promptTokens: 500_000 }).contextOverflow).toBeNull();
});

test("the score is the sum of its breakdown, so a trace shows exactly why a node won", () => {
  const nodes = [
    nodeView("a", { ...hot(12, 8192), bandwidthGbps: 400, onlineForS: 200 }),
    nodeView("b", { ...cold(12), bandwidthGbps: 273, memoryAvailableGb: 20, recentlyLoaded: [MODEL] }),
    nodeView("c", { ...cold(12), memoryTotalGb: null, memoryAvailableGb: null, onlineForS: 37 }),
  ];
  const { ranked } = score(nodes, { a: { inFlight: 5, pending: 2, avgLatencyMs: 3333 }, b: { inFlight: 1 } }, { promptTokens: 9000 });
  expect(ranked).toHaveLength(3);
  for (const s of ranked) {
    const sum = Object.values(s.breakdown).reduce((a, b) => a + b, 0);
    expect(s.score).toBeCloseTo(sum, 6);
  }
});

test("equal scores go to the node with fewer requests in flight, then to the one idle longest, then by node id", () => {
  // Past five requests the queue penalty is capped, and with free slots there is no wait: the scores tie.
  const tied = [nodeView("b", hot()), nodeView("a", hot())];
  const busier = score(tied, { a: { inFlight: 6, concurrency: 8 }, b: { inFlight: 5, concurrency: 8 } });
  expect(busier.ranked[0]!.score).toBe(busier.ranked[1]!.score);
  expect(order(busier)).toEqual(["b", "a"]);
  expect(order(score(tied, { a: { lastDispatchAt: 2000 }, b: { lastDispatchAt: 1000 } }))).toEqual(["b", "a"]);
  expect(order(score(tied))).toEqual(["a", "b"]);
});
