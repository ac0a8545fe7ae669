// A second replica of a model, warmed ahead of the requests that will want it: when the next request to join a
// node:model's queue would finish later there than after a cold load on another node with room, herd loads the
// model on that node (as a pin's warm does), so the finish-time estimate sends the next requests there and none of
// them pays the load. Pure: the rebalancer's loop gathers the inputs (the router builds the estimate's candidates)
// and does the warm.
import { type FinishCandidate, type FinishRequest, estimateFinish } from "./finish-time.ts";

/** A node that could serve the model, as the estimate reads it, and what a load there must leave alone. */
export interface ReplicaCandidate extends FinishCandidate {
  /** The GB of the other models loaded there that have requests running or waiting: a load must not evict them. */
  busyGb: number;
  /** The model's weights, on disk: what a node of unknown memory evidently holds is measured in them. */
  weightsGb: number;
}

/**
 * A warm is worth it when the cold load finishes this much sooner than the hot node's queue (both). Looser than
 * the margin for sending a request to a cold node (finish-time.ts:SPILL_MIN_MS): no request waits on a warm.
 */
export const REPLICA_RATIO = 0.9;
export const REPLICA_MIN_MS = 500;
/**
 * Hysteresis: after a replica warm, neither its model nor its node gets another for this long, so a queue that
 * builds again is not chased from node to node, and the new replica is not evicted by the next one.
 */
export const REPLICA_HOLD_MS = 60_000;

export interface ReplicaChoice {
  model: string;
  /** The node whose queue is long, and the one to warm the model on. */
  from: string;
  to: string;
  /** The estimates compared, in ms: the next request behind the queue, and a cold load on `to`. */
  hotMs: number;
  coldMs: number;
}

/**
 * Where to warm a second replica of `model`, whose queue on `hot` has requests waiting; null when no node with room
 * finishes clearly sooner. `held`: nodes a recent replica warm holds (not a target).
 */
export function chooseReplica(model: string, hot: string, candidates: readonly ReplicaCandidate[], req: FinishRequest, held: (nodeId: string) => boolean): ReplicaChoice | null {
  const home = candidates.find((c) => c.nodeId === hot && c.resident);
  if (!home || home.queue.pending === 0) return null;
  const hotEstimate = estimateFinish(home, req);
  if ("excluded" in hotEstimate) return null;
  const hotMs = hotEstimate.ms;
  let best: ReplicaChoice | null = null;
  for (const c of candidates) {
    if (c.resident || c.queue.inFlight > 0 || c.queue.pending > 0 || held(c.nodeId) || !hasRoom(c)) continue;
    const cold = estimateFinish(c, req);
    if ("excluded" in cold || !(cold.ms < hotMs * REPLICA_RATIO && hotMs - cold.ms > REPLICA_MIN_MS)) continue;
    if (!best || cold.ms < best.coldMs) best = { model, from: hot, to: c.nodeId, hotMs, coldMs: cold.ms };
  }
  return best;
}

/**
 * The model fits there beside the busy models. With the node's memory known the estimate checks it (only idle models
 * may be evicted); unknown, the most the node is evidently able to hold must take the model and the busy ones.
 */
function hasRoom(c: ReplicaCandidate): boolean {
  return (c.memory !== null && c.memory.freeGb !== null) || c.weightsGb + c.busyGb <= c.evidentMemoryGb;
}

/** The replica warms of the last REPLICA_HOLD_MS, by model and by node. */
export class ReplicaHolds {
  private readonly models = new Map<string, number>();
  private readonly nodes = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  record(choice: ReplicaChoice): void {
    this.models.set(choice.model, this.now());
    this.nodes.set(choice.to, this.now());
  }

  modelHeld(model: string): boolean {
    return this.within(this.models, model);
  }

  nodeHeld(nodeId: string): boolean {
    return this.within(this.nodes, nodeId);
  }

  private within(warms: Map<string, number>, key: string): boolean {
    const at = warms.get(key);
    if (at === undefined) return false;
    if (this.now() - at < REPLICA_HOLD_MS) return true;
    warms.delete(key);
    return false;
  }
}
