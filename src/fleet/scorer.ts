// Which node should serve a request: a pure function of the fleet snapshot, the
// queues, the config's weights and the request. No I/O, so it is easy to test
// and to replay. Every signal is bounded by its weight (negative = penalty) and
// the breakdown is returned so a trace can say why a node won.
import type { Config } from "../config/schema.ts";
import { modelKey } from "./model-name.ts";

export interface NodeView {
  id: string;
  online: boolean;
  draining: boolean;
  /** Total and free memory; null for agentless nodes, which do not report it. */
  memoryTotalGb: number | null;
  memoryAvailableGb: number | null;
  bandwidthGbps: number | null;
  /** Seconds the node has been continuously online. */
  onlineForS: number;
  loaded: LoadedModel[];
  available: DiskModel[];
  /** The same two lists by modelKey, for the lookups every request makes. */
  loadedByKey: ReadonlyMap<string, LoadedModel>;
  availableByKey: ReadonlyMap<string, DiskModel>;
  /** What the loaded models take together, and the biggest model on disk, in GB: worked out once per list the node reports. */
  loadedGb: number;
  largestOnDiskGb: number;
  /**
   * The least memory its reports showed it has, in GB: the most its loaded models took together, or what the contexts
   * they were loaded with take (ollama-releases.ts automaticContextShown); and whether its Ollama has unloaded a model
   * for room (fleet/registry.ts NodeRecord).
   */
  memoryShownGb: number;
  unloadedForRoom: boolean;
  /** Models this node unloaded recently: a reload is faster (files in page cache). */
  recentlyLoaded: string[];
  /** The context its Ollama loads a model with when a request asks none, before the model's trained context caps it. */
  defaultContext: number;
}

export interface LoadedModel {
  name: string;
  sizeGb: number;
  contextLength?: number;
}

export interface DiskModel {
  name: string;
  sizeGb: number;
  /** An Ollama cloud model: it runs at ollama.com, never loaded here. */
  remote?: boolean;
}

export interface QueueView {
  pending: number;
  inFlight: number;
  concurrency: number;
  avgLatencyMs: number;
  /** When this node:model last got a request (ms epoch; 0 = never): ties go to the one idle longest. */
  lastDispatchAt: number;
  /** The prompt tokens of the requests waiting and running there (those herd knew). */
  promptTokens: number;
}

export interface ScoreRequest {
  model: string;
  promptTokens: number;
}

export type Breakdown = {
  model_thermal: number;
  memory_fit: number;
  queue_depth: number;
  wait_time: number;
  role_affinity: number;
  availability: number;
  context_fit: number;
};

/** A node that can serve the model at all (online, not draining, holding it, big enough for it): what every ranking starts from. */
export interface Eligible {
  nodeId: string;
  node: NodeView;
  /** The model it was found for. */
  model: string;
  loaded: boolean;
  /** An Ollama cloud model on this node: no load, no memory, whatever the node holds. */
  remote: boolean;
  modelSizeGb: number;
  /** The context the node's runner for the model was loaded with, when loaded and said. */
  loadedContext: number | undefined;
  /** The prompt is larger than the loaded context window. */
  contextOverflow: { estimated: number; contextLength: number } | null;
}

export interface Eligibility {
  eligible: Eligible[];
  eliminated: { nodeId: string; reason: string }[];
}

/** A candidate as the scorer ranked it: its points and their parts. */
export interface Scored extends Eligible {
  score: number;
  breakdown: Breakdown;
  estimatedWaitMs: number;
}

/** macOS and the rest of the machine keep this much; a model must fit beside it. */
export const OS_RESERVE_GB = 6;
/** An estimated wait this long takes the whole wait-time penalty. */
const FULL_WAIT_PENALTY_MS = 30_000;
/** A node online this long has earned the whole availability bonus. */
const SETTLED_S = 600;

/**
 * The nodes that can serve `req.model` at all, and why each other node cannot: the scorer's first pass, and all
 * that routing.strategy "finish-time" reads of it (its estimate ranks them), so no points are counted for it.
 */
export function eligibleNodes(nodes: readonly NodeView[], req: ScoreRequest): Eligibility {
  const eligible: Eligible[] = [];
  const eliminated: Eligibility["eliminated"] = [];
  const key = modelKey(req.model);
  for (const node of nodes) {
    const out = (reason: string) => eliminated.push({ nodeId: node.id, reason });
    if (!node.online) {
      out("offline");
      continue;
    }
    if (node.draining) {
      out("draining");
      continue;
    }
    const loaded = node.loadedByKey.get(key);
    const onDisk = node.availableByKey.get(key);
    if (!loaded && !onDisk) {
      out("model not on this node");
      continue;
    }
    const sizeGb = loaded?.sizeGb || onDisk?.sizeGb || 0;
    if (!loaded && biggerThan(node, sizeGb)) {
      out(`model needs ${sizeGb} GB; node has ${node.memoryTotalGb} GB less a ${OS_RESERVE_GB} GB OS reserve`);
      continue;
    }
    const contextLength = loaded?.contextLength;
    const contextOverflow = contextLength && req.promptTokens > contextLength ? { estimated: req.promptTokens, contextLength } : null;
    eligible.push({ nodeId: node.id, node, model: req.model, loaded: Boolean(loaded), remote: onDisk?.remote ?? false, modelSizeGb: sizeGb, loadedContext: contextLength, contextOverflow });
  }
  return { eligible, eliminated };
}

/** A model of `sizeGb` cannot run on `node` at all: it is bigger than the node's memory less the OS's share. */
export function biggerThan(node: NodeView, sizeGb: number): boolean {
  return node.memoryTotalGb !== null && sizeGb > node.memoryTotalGb - OS_RESERVE_GB;
}

/** The eligible nodes by their points, best first (routing.strategy "score", and the order the classic balancers start from). */
export function scoreEligible(nodes: readonly NodeView[], eligible: readonly Eligible[], queues: (nodeId: string) => QueueView, scoring: Config["scoring"]): Scored[] {
  const w = scoring.weights;
  const ranked: Scored[] = [];
  const tieBreak = new Map<string, QueueView>();
  // The reference speeds are those of the nodes that can serve: an offline fast node must not make the rest look slow.
  const bandwidths = nodes.filter((n) => n.online).map((n) => n.bandwidthGbps ?? 0);
  const fastest = Math.max(1, ...bandwidths);
  const knownBandwidth = bandwidths.filter((b) => b > 0);
  const medianBandwidth = knownBandwidth.length ? knownBandwidth.sort((a, b) => a - b)[Math.floor(knownBandwidth.length / 2)]! : 0;

  for (const e of eligible) {
    const { node, modelSizeGb: sizeGb, loaded } = e;
    const key = modelKey(e.model);
    const q = queues(node.id);
    const estimatedWaitMs = (q.pending + Math.max(0, q.inFlight - q.concurrency + 1)) * (q.avgLatencyMs / Math.max(1, q.concurrency));

    const thermal = loaded ? w.hot : node.recentlyLoaded.some((m) => modelKey(m) === key) ? w.warm : w.cold;
    const memoryFit = loaded ? w.memoryFit : fitAfterLoad(node, sizeGb) * w.memoryFit;

    // A fast node drains its queue sooner: count its queue as proportionally shorter.
    const speedup = scoring.normalizeQueueByBandwidth && node.bandwidthGbps && medianBandwidth ? node.bandwidthGbps / medianBandwidth : 1;
    const depth = (q.pending + q.inFlight) / Math.max(0.25, speedup);
    const queueDepth = -Math.min(Math.abs(w.queueDepth), scoring.queuePenaltyPerRequest * depth);
    const waitTime = -Math.abs(w.waitTime) * Math.min(1, estimatedWaitMs / FULL_WAIT_PENALTY_MS);

    const roleAffinity = affinity(node, sizeGb, fastest, scoring) * w.roleAffinity;
    const availability = Math.min(1, node.onlineForS / SETTLED_S) * w.availability;
    const contextFit = e.contextOverflow ? 0 : w.contextFit;

    const breakdown: Breakdown = {
      model_thermal: round(thermal),
      memory_fit: round(memoryFit),
      queue_depth: round(queueDepth),
      wait_time: round(waitTime),
      role_affinity: round(roleAffinity),
      availability: round(availability),
      context_fit: round(contextFit),
    };
    const score = round(Object.values(breakdown).reduce((a, b) => a + b, 0));
    ranked.push({ ...e, score, breakdown, estimatedWaitMs });
    tieBreak.set(node.id, q);
  }
  // Equal scores must not all go to whichever node registered first: the less busy, then the longest idle, wins.
  ranked.sort((a, b) => {
    const [qa, qb] = [tieBreak.get(a.nodeId)!, tieBreak.get(b.nodeId)!];
    return b.score - a.score || qa.inFlight - qb.inFlight || qa.lastDispatchAt - qb.lastDispatchAt || a.nodeId.localeCompare(b.nodeId);
  });
  return ranked;
}

/** 0..1: how comfortably the model fits in what the node has free, after loading it. */
function fitAfterLoad(node: NodeView, sizeGb: number): number {
  if (node.memoryAvailableGb === null || node.memoryTotalGb === null) return 0.5;
  const left = node.memoryAvailableGb - sizeGb;
  if (left < 0) return 0; // Ollama will have to evict something first
  return Math.min(1, left / Math.max(1, node.memoryTotalGb * 0.5));
}

/** 0..1: big models belong on the fastest machines, small ones on the smaller machines that would otherwise idle. */
function affinity(node: NodeView, sizeGb: number, fastestGbps: number, scoring: Config["scoring"]): number {
  const speed = scoring.bandwidthAware && node.bandwidthGbps ? node.bandwidthGbps / fastestGbps : memoryTier(node);
  if (sizeGb >= scoring.largeModelGb) return speed;
  if (sizeGb <= scoring.smallModelGb) return 1 - speed * 0.5;
  return 0.5;
}

function memoryTier(node: NodeView): number {
  const gb = node.memoryTotalGb ?? 32;
  return gb >= 128 ? 1 : gb >= 64 ? 0.75 : gb >= 32 ? 0.5 : 0.25;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
