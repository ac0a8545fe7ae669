// Two answers to a backed-up node:model, each cycle. It moves waiting requests onto another node that has
// the model, room for it, and a free slot right now (a moved request is routed again from its next candidate,
// so it is never lost and never runs twice). And under the finish-time strategy it warms a second replica
// where a cold load would finish clearly sooner than the queue (replicas.ts decides); there a move goes only
// where the model is loaded: a cold copy is the estimate's to weigh (its load, what it evicts, the node's busy models).
import type { Config } from "../config/schema.ts";
import { log } from "../log.ts";
import type { FinishRequest } from "./finish-time.ts";
import { loadableUrl } from "./pins.ts";
import type { Warmer } from "./preloader.ts";
import type { Queues } from "./queues.ts";
import { diskBytes, loadedOn, type NodeRecord, onDisk, type Registry } from "./registry.ts";
import { chooseReplica, type ReplicaCandidate, type ReplicaChoice, ReplicaHolds } from "./replicas.ts";
import { OS_RESERVE_GB } from "./scorer.ts";
import { toGb } from "./node-models.ts";

/** One pass; returns how many requests were moved. */
export function rebalance(registry: Registry, queues: Queues, config: Config): number {
  const { threshold, maxPerCycle } = config.rebalancer;
  const estimated = config.routing.strategy === "finish-time";
  let moved = 0;
  for (const q of queues.entries()) {
    if (q.pending < threshold || moved >= maxPerCycle) continue;
    const spare = registry
      .all()
      .filter((n) => n.id !== q.node_id && n.status === "online" && !registry.isDraining(n) && n.ollama?.reachable)
      .filter((n) => (estimated ? loadedOn(n, q.model) : onDisk(n, q.model) && fits(registry, n, q.model)))
      .reduce((free, n) => {
        const there = queues.view(n.id, q.model);
        const parallel = registry.parallel(n.id);
        return free + (there.pending ? 0 : Math.max(0, parallel - there.inFlight));
      }, 0);
    const count = Math.min(spare, q.pending, maxPerCycle - moved);
    if (count <= 0) continue;
    moved += queues.move(q.node_id, q.model, count, "by the rebalancer");
    log.info(`rebalancer: moved ${count} waiting request(s) for ${q.model} off ${q.node_id} (${q.pending} were waiting)`);
  }
  return moved;
}

/** The model is resident on the node, or fits in its memory as far as herd knows it: a move must not send requests where it cannot load. */
function fits(registry: Registry, node: NodeRecord, model: string): boolean {
  const memoryGb = registry.hardware(node).memoryTotalGb;
  return loadedOn(node, model) || memoryGb === null || toGb(diskBytes(node, model)) <= memoryGb - OS_RESERVE_GB;
}

/** What the replica pass is given: the estimate's inputs for a model (the router builds its candidates) and what loads it. */
export interface ReplicaSources {
  /** `promptTokens`: the prompt the estimate takes for the requests to come. */
  inputs(model: string, promptTokens: number): { candidates: ReplicaCandidate[]; request: FinishRequest };
  warmer: Warmer;
}

/** One replica pass: at most one warm per model, none of a model or onto a node a recent warm holds; returns the warms begun. */
export function warmReplicas(registry: Registry, queues: Queues, config: Config, sources: ReplicaSources, holds: ReplicaHolds): ReplicaChoice[] {
  if (config.routing.strategy !== "finish-time") return [];
  const begun: ReplicaChoice[] = [];
  for (const q of queues.entries()) {
    if (q.pending === 0 || holds.modelHeld(q.model)) continue;
    // The requests to come are taken to be like those the queue served (nothing yet: the reply alone).
    const { candidates, request } = sources.inputs(q.model, q.usage.samples ? q.usage.promptTokens / q.usage.samples : 0);
    const choice = chooseReplica(q.model, q.node_id, candidates, request, (id) => holds.nodeHeld(id));
    const node = choice && registry.get(choice.to);
    const url = node && loadableUrl(registry, node);
    if (!choice || !url) continue;
    holds.record(choice);
    log.info(`rebalancer: warming ${choice.model} on ${choice.to}: ${q.pending} waiting on ${choice.from}, the next would finish in ${Math.round(choice.hotMs)} ms there, ${Math.round(choice.coldMs)} ms after a load on ${choice.to}`);
    sources.warmer.warm(choice.to, url, choice.model, config.timeouts.firstByteMs, "while used").catch((e) => log.warn(`rebalancer: ${choice.model} did not load on ${choice.to}: ${(e as Error).message}`));
    begun.push(choice);
  }
  return begun;
}

export function startRebalancer(registry: Registry, queues: Queues, config: () => Config, replicas: ReplicaSources): { stop(): void } {
  let timer: Timer | null = null;
  const holds = new ReplicaHolds();
  const loop = () => {
    warmReplicas(registry, queues, config(), replicas, holds);
    rebalance(registry, queues, config());
    timer = setTimeout(loop, config().rebalancer.intervalMs);
  };
  timer = setTimeout(loop, config().rebalancer.intervalMs);
  return { stop: () => timer && clearTimeout(timer) };
}
