// routing.strategy "finish-time": the scorer's eligible nodes (online, not draining, holding the model,
// big enough for it) ranked by when the request would finish on each (fleet/finish-time.ts), from the
// queues, the nodes' memory, the context each has the model loaded with and the speeds herd learned.
// Each candidate keeps that estimate as its prediction, and is given points from it as seed 000's X-Fleet-Score
// means them (higher = better fit, fitOf).
import type { Config } from "../config/schema.ts";
import { replyCapOf } from "../core/request.ts";
import { type Estimated, type FinishBreakdown, type FinishCandidate, type FinishRequest, type EvictableModel, leftOfMs, rankByFinishTime } from "../fleet/finish-time.ts";
import { kvGbPerToken, loadedSizeGb } from "../fleet/loaded-size.ts";
import { modelKey, normalizeModelName } from "../fleet/model-name.ts";
import { GB } from "../fleet/node-models.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import type { Queues } from "../fleet/queues.ts";
import { diskBytes, type Registry } from "../fleet/registry.ts";
import type { ReplicaCandidate } from "../fleet/replicas.ts";
import { type Breakdown, type Eligible, eligibleNodes, type LoadedModel, type NodeView, OS_RESERVE_GB } from "../fleet/scorer.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";
import type { Speeds } from "../fleet/speeds.ts";
import type { ExploreTurns } from "../fleet/explore-turns.ts";
import { effectiveContext, MAX_LOADED_MODELS } from "../fleet/ollama-releases.ts";
import { type Adjusted, contextAt, optionsFor, reloadsRunner } from "./body-rules.ts";
import { nodeView } from "./node-view.ts";

/** A reply's length before herd has seen the model answer. */
export const DEFAULT_REPLY_TOKENS = 256;

/** What the ranking reads of the fleet. */
export interface FinishSources {
  config: Pick<Config, "features">;
  registry: Registry;
  queues: Queues;
  speeds: Pick<Speeds, "predict" | "typicalReply">;
  exploreTurns: Pick<ExploreTurns, "due">;
  promptCounts: Pick<PromptCounts, "expected">;
  /** What /api/show said of each model, without waiting: its trained context (a load's context) and its weights' blob (the order Ollama evicts in). */
  modelFacts: Pick<ModelFacts, "answeredOf">;
}

/** A model evicted this recently (its node:model last dispatched to) is taken to be asked for again soon. */
export const RECENT_USE_MS = 60_000;

/** Seed 000's parts of a routing score: the point scorer's, less the two it adds (availability, context_fit). */
export type FitBreakdown = Pick<Breakdown, "model_thermal" | "memory_fit" | "queue_depth" | "wait_time" | "role_affinity">;

/**
 * A candidate ranked by its finish time: its prediction the estimate in ms (lower is sooner) and its parts; its score
 * and breakdown the points fitOf gives it (higher = better fit).
 */
export type Timed = Eligible & { score: number; breakdown: FitBreakdown; estimatedWaitMs: number; prediction: { ms: number; breakdown: FinishBreakdown }; evicts: string[] };

/**
 * The eligible nodes (fleet/scorer.ts:eligibleNodes) by their estimated finish. `cachedPrefixTokens`: per node, the
 * prompt tokens it likely still holds cached for this request (session affinity's input; none by default).
 * `options`: what the request would be sent with on a candidate, the dispatcher's own rule (by default with the
 * model's trained context unknown); `trained`: the model's trained context (null: unknown), which caps the context a
 * load there would get.
 */
export function byFinishTime(
  sources: FinishSources,
  eligible: readonly Eligible[],
  req: Parameters<typeof optionsFor>[0] & { stream?: boolean },
  cachedPrefixTokens: (nodeId: string) => number = () => 0,
  options: (e: Eligible) => Adjusted = untrained(optionsFor(req, sources.promptCounts, sources.config.features.contextProtection)),
  trained: number | null = null,
): Timed[] {
  const model = eligible[0]?.model;
  if (model === undefined) return [];
  // The num_ctx the request would be sent there, by the rule the dispatcher applies, against the runner's.
  const reloads = (e: Eligible) => reloadsRunner(options(e).options, e.loadedContext);
  // The trained context the dispatcher looked up, else what an earlier lookup said: a small request does not wait for one.
  const trainedContext = trained ?? sources.modelFacts.answeredOf(model)?.contextLength ?? null;
  const context = (e: Eligible) => options(e).options.num_ctx ?? effectiveContext(e.node.defaultContext, trainedContext);
  const candidates = finishCandidates(sources, eligible, model, cachedPrefixTokens, reloads, context);
  const typical = req.kind === "embed" ? 0 : typicalReply(sources, model);
  const cap = req.kind === "embed" ? 0 : replyCapOf(req);
  const outputTokens = cap !== null && cap > 0 ? cap : typical;
  // A node not yet learned for the model may take this request, one in so many of the model's.
  const explore = candidates.some((c) => c.speedKnown === false) && sources.exploreTurns.due(model);
  const { ranked } = rankByFinishTime(candidates, { promptTokens: req.promptTokens, outputTokens, typicalOutputTokens: typical, stream: req.stream === true, explore });
  const fit = fitOf(ranked);
  return ranked.map((e) => ({ ...e.candidate.eligible, ...fit(e), estimatedWaitMs: e.breakdown.wait_ms, prediction: { ms: e.ms, breakdown: e.breakdown }, evicts: e.evicts }));
}

/**
 * Points for each ranked estimate, as seed 000 means a routing score ("higher = better fit"): 100 × the least
 * prompt-and-reply time any candidate would take ÷ this one's whole estimate, so 100 is the fastest node with nothing
 * in the way. Its parts (≤ 0, together the score less 100) are the share of the estimate, in %, each kind of delay
 * takes: the load or reload (model_thermal), the evictions (memory_fit), the wait behind the requests queued
 * (queue_depth) and running (wait_time) there, split by their numbers, and a slower node's or an uncached prompt's
 * extra prompt-and-reply time (role_affinity).
 */
function fitOf(ranked: readonly Estimated<FinishCandidate>[]): (e: Estimated<FinishCandidate>) => { score: number; breakdown: FitBreakdown } {
  const work = (b: FinishBreakdown) => b.prefill_ms + b.decode_ms;
  const ideal = Math.min(...ranked.map((e) => work(e.breakdown)));
  return ({ ms, breakdown: b, candidate: { queue } }) => {
    const share = (partMs: number) => (ms > 0 && partMs > 0 ? -Math.round((partMs / ms) * 1000) / 10 : 0);
    const ahead = queue.pending + queue.inFlight;
    const queued = ahead > 0 ? queue.pending / ahead : 0;
    return {
      score: ms > 0 ? Math.round((100 * ideal) / ms) : 100,
      breakdown: {
        model_thermal: share(b.load_ms + b.reload_ms),
        memory_fit: share(b.evict_ms),
        queue_depth: share(b.wait_ms * queued),
        wait_time: share(b.wait_ms * (1 - queued)),
        role_affinity: share(work(b) - ideal),
      },
    };
  };
}

const untrained = (options: ReturnType<typeof optionsFor>) => (e: Eligible) => options(e.model, contextAt(e, null));

/** What the rebalancer's replica pass reads for `model` (fleet/replicas.ts): the nodes that could serve it as the estimate sees them, and a typical request. */
export function replicaInputs(sources: FinishSources, model: string, promptTokens: number): { candidates: ReplicaCandidate[]; request: FinishRequest } {
  const { registry, queues } = sources;
  const nodes = registry.all().map((n) => nodeView(registry, n));
  // A cloud model has no replica to warm.
  const eligible = eligibleNodes(nodes, { model, promptTokens }).eligible.filter((e) => !e.remote);
  // A typical request fits the runners as loaded: no reload to price.
  // A warm evicts no busy model: no request waits on it.
  const candidates = finishCandidates(sources, eligible, model, () => 0, () => false, (e) => e.loadedContext ?? e.node.defaultContext, false).map((c) => ({
    ...c,
    busyGb: busyModels(c.eligible.node, model, queues).reduce((sum, m) => sum + m.sizeGb, 0),
    weightsGb: c.eligible.modelSizeGb,
  }));
  const typical = typicalReply(sources, model);
  return { candidates, request: { promptTokens, outputTokens: typical, typicalOutputTokens: typical } };
}

/** The eligible nodes as the estimate reads them, each with its eligibility kept. */
function finishCandidates(
  sources: FinishSources,
  eligible: readonly Eligible[],
  model: string,
  cachedPrefixTokens: (nodeId: string) => number,
  reloads: (e: Eligible) => boolean,
  context: (e: Eligible) => number,
  evictBusy = true,
): (FinishCandidate & { eligible: Eligible })[] {
  const { registry, queues, speeds } = sources;
  const now = Date.now();
  const views = eligible.map((e) => e.node);
  let kvPerToken: number | null = null; // the same for every candidate: worked out for the first that loads
  return eligible.map((e) => {
    const q = queues.view(e.nodeId, model);
    const bytes = diskBytes(registry.get(e.nodeId), model) || e.modelSizeGb * GB;
    // A request running there means the model is loaded or loading, before the next report says so, unless a load
    // herd sent there evicts it once that request ends (fleet/node-loads.ts); a cloud model is never loaded there at all.
    const leaving = !e.remote && queues.loads.evicting(e.nodeId, model, now);
    const resident = e.remote || ((e.loaded || q.inFlight > 0) && !leaving);
    const slots = registry.parallel(e.nodeId);
    const speed = speeds.predict(e.nodeId, model, bytes, now);
    const oldest = queues.oldestRunningSince(e.nodeId, model);
    // A load takes the weights and the KV cache of the context the model gets there. The cache per token is read off
    // the candidates' views: a node that has the model loaded is always one of them.
    kvPerToken ??= resident ? null : kvGbPerToken(model, e.modelSizeGb, views);
    return {
      eligible: e,
      nodeId: e.nodeId,
      resident,
      sizeGb: resident ? e.modelSizeGb : loadedSizeGb(e.modelSizeGb, kvPerToken!, context(e), slots),
      queue: q,
      runningForMs: oldest === null ? 0 : Math.max(0, now - oldest),
      loading: resident && !e.loaded && !e.remote,
      loadLeftMs: queues.loads.loadLeftMs(e.nodeId, model, now) ?? undefined,
      loadsAheadMs: queues.loads.aheadMs(e.nodeId, now),
      slots,
      speed,
      speedKnown: speed.fresh,
      // Only a load needs room: a resident model's is not counted.
      memory: resident ? null : memoryOf(sources, e.node, model, now, views, evictBusy),
      cachedPrefixTokens: cachedPrefixTokens(e.nodeId),
      reloadsRunner: reloads(e),
      evidentMemoryGb: evidentMemoryGb(e.node),
    };
  });
}

const typicalReply = ({ speeds }: FinishSources, model: string) => speeds.typicalReply(model) ?? DEFAULT_REPLY_TOKENS;

/**
 * Room for `model` on the node: what its agent reports free, else its declared memory less the OS's share and the
 * models loaded; and the models loaded (or loading) there that a load may evict, in the order Ollama's scheduler does
 * (server/sched.go v0.32.15 findRunnerToUnload: the runners by keep_alive, then by the path of their weights' blob, the
 * first idle one, else the first busy one once its requests end; herd takes every keep_alive to be the same, and puts a
 * model whose blob it has not learned yet last, least recently used first). Each asked for within RECENT_USE_MS is priced at its load there,
 * a busy one at its load for each request waiting for it there.
 * `evictBusy` false: only the idle ones (a replica warm). The free GB is null when the node's memory is unknown.
 */
function memoryOf(sources: FinishSources, node: NodeView, model: string, now: number, views: readonly NodeView[], evictBusy: boolean): FinishCandidate["memory"] {
  const { registry, speeds, queues, modelFacts } = sources;
  // Of a node whose memory is unknown, once it has unloaded a model for room: about what it evidently held.
  const total = node.memoryTotalGb === null ? (node.unloadedForRoom ? evidentMemoryGb(node) : null) : node.memoryTotalGb - OS_RESERVE_GB;
  const reported = node.memoryAvailableGb ?? (total === null ? null : total - node.loadedGb);
  // A model herd is loading there (a request of it runs, the node has not reported it yet) takes its room and its place
  // already; one a load herd sent there evicts (its request still runs) gives both to that load's model.
  const loading = queues.runningModels(node.id).filter((m) => modelKey(m) !== modelKey(model) && !node.loadedByKey.has(modelKey(m)) && !queues.loads.evicting(node.id, m, now));
  const busy = busyModels(node, model, queues);
  // One loading is busy too (its request runs), and as much a runner Ollama may evict as one loaded.
  const loadingModels = loading.map((name) => ({ name, sizeGb: expectedLoadGb(node, name, views, modelFacts.answeredOf(name)?.contextLength ?? null), loading: true }));
  const evictable = [...node.loaded.filter((m) => modelKey(m.name) !== modelKey(model) && (evictBusy || !busy.includes(m))), ...(evictBusy ? loadingModels : [])]
    .map((m) => {
      const isLoading = "loading" in m;
      const isBusy = isLoading || busy.includes(m);
      const name = normalizeModelName(m.name);
      const queue = queues.view(node.id, name);
      const usedAt = queue.lastDispatchAt;
      const bytes = diskBytes(registry.get(node.id), m.name) || m.sizeGb * GB;
      const speed = speeds.predict(node.id, m.name, bytes, now);
      const since = isBusy ? queues.oldestRunningSince(node.id, name) : null;
      const replyMs = ((speeds.typicalReply(m.name) ?? DEFAULT_REPLY_TOKENS) / speed.decodeTps) * 1000 + (isLoading ? speed.loadMs : 0);
      const victim: EvictableModel = {
        name: m.name,
        sizeGb: m.sizeGb,
        // A busy model's requests waiting there each wait for its reload; an idle one asked for lately, its next.
        reloadMs: isBusy ? speed.loadMs * Math.max(1, queue.pending) : usedAt > 0 && now - usedAt < RECENT_USE_MS ? speed.loadMs : 0,
        busyMs: since === null ? 0 : leftOfMs(replyMs, now - since),
      };
      return { victim, busy: isBusy, blob: modelFacts.answeredOf(m.name)?.blob ?? null, usedAt };
    })
    .sort((a, b) => Number(a.busy) - Number(b.busy) || byBlob(a.blob, b.blob) || a.usedAt - b.usedAt)
    .map((v) => v.victim);
  const loadingGb = reported === null ? 0 : loadingModels.reduce((sum, m) => sum + m.sizeGb, 0);
  return { freeGb: reported === null ? null : reported - loadingGb, modelsFree: MAX_LOADED_MODELS - node.loaded.length - loading.length, evictable, evictsAll: evictBusy };
}

/** Blobs in path order, those not learned last. */
const byBlob = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);

/**
 * What `model` will take loaded on the node: the context the node picks, cut as a candidate's is (effectiveContext) to
 * its trained context (`trained`: what /api/show said, else the largest the fleet shows it loaded with; herd does not
 * know what its request asked).
 */
function expectedLoadGb(node: NodeView, model: string, views: readonly NodeView[], trained: number | null): number {
  const key = modelKey(model);
  const diskGb = node.availableByKey.get(key)?.sizeGb ?? 0;
  const seen = Math.max(0, ...views.map((v) => v.loadedByKey.get(key)?.contextLength ?? 0));
  return loadedSizeGb(diskGb, kvGbPerToken(model, diskGb, views), effectiveContext(node.defaultContext, trained ?? (seen || null)), 1);
}

/** The node's loaded models other than `model` with requests running or waiting there: a load must not evict them. */
function busyModels(node: NodeView, model: string, queues: Queues): LoadedModel[] {
  return node.loaded.filter((m) => {
    if (modelKey(m.name) === modelKey(model)) return false;
    const q = queues.view(node.id, normalizeModelName(m.name));
    return q.inFlight > 0 || q.pending > 0;
  });
}

/**
 * The node's memory as reported or declared, else the least it must have: what its reports showed (NodeView
 * memoryShownGb), its loaded models together, or its biggest model on disk.
 */
function evidentMemoryGb(node: NodeView): number {
  return node.memoryTotalGb ?? Math.max(node.memoryShownGb, node.loadedGb, node.largestOnDiskGb);
}
