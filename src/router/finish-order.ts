// routing.strategy "finish-time": the scorer's eligible nodes (online, not draining, holding the model,
// big enough for it) ranked by when the request would finish on each (fleet/finish-time.ts), from the
// queues, the nodes' memory and the speeds herd learned. Each candidate's score becomes that estimate, in ms.
import { type InferenceRequest, replyCapOf } from "../core/request.ts";
import { type FinishBreakdown, type FinishCandidate, rankByFinishTime } from "../fleet/finish-time.ts";
import { modelKey, normalizeModelName } from "../fleet/model-name.ts";
import { GB } from "../fleet/node-models.ts";
import type { Queues } from "../fleet/queues.ts";
import { diskBytes, type Registry } from "../fleet/registry.ts";
import { type NodeView, OS_RESERVE_GB, type Scored } from "../fleet/scorer.ts";
import type { Speeds } from "../fleet/speeds.ts";

/** A reply's length before herd has seen the model answer. */
export const DEFAULT_REPLY_TOKENS = 256;

/** What the ranking reads of the fleet. */
export interface FinishSources {
  registry: Registry;
  queues: Queues;
  speeds: Pick<Speeds, "predict" | "typicalReply">;
}

/** A candidate ranked by its finish time: its score is the estimate in ms (lower is sooner), its breakdown the parts. */
export type Timed = Omit<Scored, "breakdown"> & { breakdown: FinishBreakdown };

/**
 * `cachedPrefixTokens`: per node, the prompt tokens it likely still holds cached for this request (session
 * affinity's input; none by default).
 */
export function byFinishTime(
  { registry, queues, speeds }: FinishSources,
  nodes: readonly NodeView[],
  scored: readonly Scored[],
  req: Pick<InferenceRequest, "kind" | "promptTokens" | "options">,
  cachedPrefixTokens: (nodeId: string) => number = () => 0,
): Timed[] {
  const model = scored[0]?.model;
  if (model === undefined) return [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const candidates = scored.map((s): FinishCandidate & { scored: Scored } => {
    const node = byId.get(s.nodeId)!;
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
      evidentMemoryGb: evidentMemoryGb(node),
    };
  });
  const typical = req.kind === "embed" ? 0 : (speeds.typicalReply(model) ?? DEFAULT_REPLY_TOKENS);
  const cap = req.kind === "embed" ? 0 : replyCapOf(req);
  const outputTokens = cap !== null && cap > 0 ? cap : typical;
  const { ranked } = rankByFinishTime(candidates, { promptTokens: req.promptTokens, outputTokens, typicalOutputTokens: typical });
  return ranked.map((e) => ({ ...e.candidate.scored, score: e.ms, breakdown: e.breakdown, estimatedWaitMs: e.breakdown.wait_ms }));
}

/**
 * Room for `model` on the node: what its agent reports free, else its declared memory less the OS's share and the
 * models loaded; and the loaded models no request uses there now, which a load may evict. Null when unknown.
 */
function memoryOf(node: NodeView, model: string, queues: Queues): FinishCandidate["memory"] {
  const loadedGb = node.loaded.reduce((sum, m) => sum + m.sizeGb, 0);
  const freeGb = node.memoryAvailableGb ?? (node.memoryTotalGb === null ? null : node.memoryTotalGb - OS_RESERVE_GB - loadedGb);
  if (freeGb === null) return null;
  const idleGb = node.loaded
    .filter((m) => modelKey(m.name) !== modelKey(model))
    .filter((m) => {
      const q = queues.view(node.id, normalizeModelName(m.name));
      return q.inFlight === 0 && q.pending === 0;
    })
    .map((m) => m.sizeGb);
  return { freeGb, idleGb };
}

/** The node's memory as reported or declared, else the least it must have: its loaded models together, or its biggest on disk. */
function evidentMemoryGb(node: NodeView): number {
  const sum = (models: readonly { sizeGb: number }[]) => models.reduce((total, m) => total + m.sizeGb, 0);
  return node.memoryTotalGb ?? Math.max(sum(node.loaded), ...node.available.map((m) => m.sizeGb), 0);
}
