// Moves waiting requests off a backed-up node:model onto another node that has
// the model, room for it, and a free slot right now. A moved request is routed again from
// its next candidate, so it is never lost and never runs twice.
import type { Config } from "../config/schema.ts";
import { log } from "../log.ts";
import type { Queues } from "./queues.ts";
import { diskBytes, loadedOn, type NodeRecord, onDisk, type Registry } from "./registry.ts";
import { OS_RESERVE_GB } from "./scorer.ts";
import { toGb } from "./node-models.ts";

/** One pass; returns how many requests were moved. */
export function rebalance(registry: Registry, queues: Queues, config: Config): number {
  const { threshold, maxPerCycle } = config.rebalancer;
  let moved = 0;
  for (const q of queues.entries()) {
    if (q.pending < threshold || moved >= maxPerCycle) continue;
    const spare = registry
      .all()
      .filter((n) => n.id !== q.node_id && n.status === "online" && !registry.isDraining(n) && n.ollama?.reachable)
      .filter((n) => onDisk(n, q.model) && fits(registry, n, q.model))
      .reduce((free, n) => {
        const there = queues.view(n.id, q.model);
        const parallel = registry.parallel(n.id);
        return free + (there.pending ? 0 : Math.max(0, parallel - there.inFlight));
      }, 0);
    const count = Math.min(spare, q.pending, maxPerCycle - moved);
    if (count <= 0) continue;
    moved += queues.move(q.node_id, q.model, count);
    log.info(`rebalancer: moved ${count} waiting request(s) for ${q.model} off ${q.node_id} (${q.pending} were waiting)`);
  }
  return moved;
}

/** The model is resident on the node, or fits in its memory as far as herd knows it: a move must not send requests where it cannot load. */
function fits(registry: Registry, node: NodeRecord, model: string): boolean {
  const memoryGb = registry.hardware(node).memoryTotalGb;
  return loadedOn(node, model) || memoryGb === null || toGb(diskBytes(node, model)) <= memoryGb - OS_RESERVE_GB;
}

export function startRebalancer(registry: Registry, queues: Queues, config: () => Config): { stop(): void } {
  let timer: Timer | null = null;
  const loop = () => {
    rebalance(registry, queues, config());
    timer = setTimeout(loop, config().rebalancer.intervalMs);
  };
  timer = setTimeout(loop, config().rebalancer.intervalMs);
  return { stop: () => timer && clearTimeout(timer) };
}
