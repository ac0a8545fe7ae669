// routing.strategy "finish-time": the scorer's eligible nodes (online, not draining, holding the model,
// big enough for it) ranked by when the request would finish on each (fleet/finish-time.ts), from the
// queues, the nodes' memory, the context each has the model loaded with and the speeds herd learned.
// Each candidate's score becomes that estimate, in ms.
import type { Config } from "../config/schema.ts";
import { type InferenceRequest, replyCapOf } from "../core/request.ts";
import { type FinishBreakdown, type FinishCandidate, type FinishRequest, rankByFinishTime } from "../fleet/finish-time.ts";
import { modelKey, normalizeModelName } from "../fleet/model-name.ts";
import { GB } from "../fleet/node-models.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import type { Queues } from "../fleet/queues.ts";
import { diskBytes, type Registry } from "../fleet/registry.ts";
import type { ReplicaCandidate } from "../fleet/replicas.ts";
import { type LoadedModel, type NodeView, OS_RESERVE_GB, type Scored, scoreNodes } from "../fleet/scorer.ts";
import type { Speeds } from "../fleet/speeds.ts";
import { optionsOn, reloadsRunner } from "./body-rules.ts";
import { nodeView, runnerContext } from "./node-view.ts";

/** A reply's length before herd has seen the model answer. */
export const DEFAULT_REPLY_TOKENS = 256;

/** What the ranking reads of the fleet. */
export interface FinishSources {
  config: Pick<Config, "features">;
  registry: Registry;
  queues: Queues;
  speeds: Pick<Speeds, "predict" | "typicalReply">;
  promptCounts: Pick<PromptCounts, "expected">;
}

/** A candidate ranked by its finish time: its score is the estimate in ms (lower is sooner), its breakdown the parts. */
export type Timed = Omit<Scored, "breakdown"> & { breakdown: FinishBreakdown };

/**
 * `cachedPrefixTokens`: per node, the prompt tokens it likely still holds cached for this request (session
 * affinity's input; none by default).
 */
export function byFinishTime(
  sources: FinishSources,
  nodes: readonly NodeView[],
  scored: readonly Scored[],
  req: Pick<InferenceRequest, "kind" | "promptTokens" | "options" | "think">,
  cachedPrefixTokens: (nodeId: string) => number = () => 0,
): Timed[] {
  const model = scored[0]?.model;
  if (model === undefined) return [];
  // The num_ctx the request would be sent there, by the rule the dispatcher applies, against the runner's.
  const reloads = (node: NodeView) => {
    const loaded = runnerContext(node, model);
    return reloadsRunner(optionsOn(req, model, loaded, sources.promptCounts, sources.config.features.contextProtection).options, loaded);
  };
  const candidates = finishCandidates(sources, nodes, scored, model, cachedPrefixTokens, reloads);
  const typical = req.kind === "embed" ? 0 : typicalReply(sources, model);
  const cap = req.kind === "embed" ? 0 : replyCapOf(req);
  const outputTokens = cap !== null && cap > 0 ? cap : typical;
  const { ranked } = rankByFinishTime(candidates, { promptTokens: req.promptTokens, outputTokens, typicalOutputTokens: typical });
  return ranked.map((e) => ({ ...e.candidate.scored, score: e.ms, breakdown: e.breakdown, estimatedWaitMs: e.breakdown.wait_ms }));
}

/** What the rebalancer's replica pass reads for `model` (fleet/replicas.ts): the nodes that could serve it as the estimate sees them, and a typical request. */
export function replicaInputs(sources: FinishSources & { config: Config }, model: string, promptTokens: number): { candidates: ReplicaCandidate[]; request: FinishRequest } {
  const { registry, queues, config } = sources;
  const nodes = registry.all().map((n) => nodeView(registry, n));
  const scored = scoreNodes(nodes, (id) => queues.view(id, model), { model, promptTokens }, config.scoring).ranked;
  // A typical request fits the runners as loaded: no reload to price.
  const candidates = finishCandidates(sources, nodes, scored, model, () => 0, () => false).map((c) => ({
    ...c,
    busyGb: busyModels(nodes.find((n) => n.id === c.nodeId)!, model, queues).reduce((sum, m) => sum + m.sizeGb, 0),
  }));
  const typical = typicalReply(sources, model);
  return { candidates, request: { promptTokens, outputTokens: typical, typicalOutputTokens: typical } };
}

/** The scored nodes as the estimate reads them, each with its score kept. */
function finishCandidates(
  { registry, queues, speeds }: FinishSources,
  nodes: readonly NodeView[],
  scored: readonly Scored[],
  model: string,
  cachedPrefixTokens: (nodeId: string) => number,
  reloads: (node: NodeView) => boolean,
): (FinishCandidate & { scored: Scored })[] {
  return scored.map((s) => {
    const node = nodes.find((n) => n.id === s.nodeId)!; // a few nodes: a scan costs less than a map built per request
    const q = queues.view(s.nodeId, model);
    const bytes = diskBytes(registry.get(s.nodeId), model) || s.modelSizeGb * GB;
    return {
      scored: s,
      nodeId: s.nodeId,
      // A request running there means the model is loaded or loading, before the next report says so.
      resident: s.loaded || q.inFlight > 0,
      sizeGb: s.modelSizeGb,
      queue: q,
      slots: registry.parallel(s.nodeId),
      speed: speeds.predict(s.nodeId, model, bytes),
      memory: memoryOf(node, model, queues),
      cachedPrefixTokens: cachedPrefixTokens(s.nodeId),
      reloadsRunner: reloads(node),
      evidentMemoryGb: evidentMemoryGb(node),
    };
  });
}

const typicalReply = ({ speeds }: FinishSources, model: string) => speeds.typicalReply(model) ?? DEFAULT_REPLY_TOKENS;

/**
 * Room for `model` on the node: what its agent reports free, else its declared memory less the OS's share and the
 * models loaded; and the loaded models no request uses there now, which a load may evict. Null when unknown.
 */
function memoryOf(node: NodeView, model: string, queues: Queues): FinishCandidate["memory"] {
  const loadedGb = node.loaded.reduce((sum, m) => sum + m.sizeGb, 0);
  const freeGb = node.memoryAvailableGb ?? (node.memoryTotalGb === null ? null : node.memoryTotalGb - OS_RESERVE_GB - loadedGb);
  if (freeGb === null) return null;
  const busy = busyModels(node, model, queues);
  const idleGb = node.loaded.filter((m) => modelKey(m.name) !== modelKey(model) && !busy.includes(m)).map((m) => m.sizeGb);
  return { freeGb, idleGb };
}

/** The node's loaded models other than `model` with requests running or waiting there: a load must not evict them. */
function busyModels(node: NodeView, model: string, queues: Queues): LoadedModel[] {
  return node.loaded.filter((m) => {
    if (modelKey(m.name) === modelKey(model)) return false;
    const q = queues.view(node.id, normalizeModelName(m.name));
    return q.inFlight > 0 || q.pending > 0;
  });
}

/** The node's memory as reported or declared, else the least it must have: its loaded models together, or its biggest on disk. */
function evidentMemoryGb(node: NodeView): number {
  const sum = (models: readonly { sizeGb: number }[]) => models.reduce((total, m) => total + m.sizeGb, 0);
  return node.memoryTotalGb ?? Math.max(sum(node.loaded), ...node.available.map((m) => m.sizeGb), 0);
}
