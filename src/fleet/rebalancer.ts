// Two answers to a backed-up node:model, each cycle. It moves waiting requests off it: under the finish-time
// strategy while the estimate says the last of them would finish clearly sooner on another node that has the model
// loaded; under the others onto nodes that have the model, room for it, and a free slot right now (a moved request
// is routed again from its next candidate, so it is never lost and never runs twice). And under finish-time it warms
// a second replica where a cold load would finish clearly sooner than the queue (replicas.ts decides): a cold copy is
// the estimate's to weigh (its load, what it evicts, the node's busy models), never a move's.
import type { Config } from "../config/schema.ts";
import { log } from "../log.ts";
import { estimateFinish, type FinishCandidate, type FinishRequest, SPILL_MIN_MS } from "./finish-time.ts";
import { loadableUrl } from "./pins.ts";
import type { Warmer } from "./preloader.ts";
import type { Queues } from "./queues.ts";
import { diskBytes, loadedOn, type NodeRecord, onDisk, type Registry } from "./registry.ts";
import { chooseReplica, type ReplicaCandidate, type ReplicaChoice, ReplicaHolds } from "./replicas.ts";
import { OS_RESERVE_GB } from "./scorer.ts";
import { toGb } from "./node-models.ts";

/**
 * One pass; returns how many requests were moved. Under finish-time (`inputs` given: the estimate's view of a model),
 * a queue's newest waiters move while the last of them would finish clearly sooner on a node that has the model
 * loaded: a node stuck inside (its running request long overdue, behind a load or a reload there) is left by the
 * requests herd holds for it, not only by those still to come. Otherwise onto free slots of nodes that can load it.
 */
export function rebalance(registry: Registry, queues: Queues, config: Config, inputs?: ReplicaSources["inputs"]): number {
  const { threshold, maxPerCycle } = config.rebalancer;
  const estimated = config.routing.strategy === "finish-time";
  let moved = 0;
  for (const q of queues.entries()) {
    if (q.pending < threshold || moved >= maxPerCycle) continue;
    const most = Math.min(q.pending, maxPerCycle - moved);
    const count = estimated ? (inputs ? soonerElsewhere(q.node_id, inputs(q.model, typicalPrompt(q)), most) : 0) : Math.min(spareSlots(registry, queues, q.node_id, q.model), most);
    if (count <= 0) continue;
    moved += queues.move(q.node_id, q.model, count, "by the rebalancer");
    log.info(`rebalancer: moved ${count} waiting request(s) for ${q.model} off ${q.node_id} (${q.pending} were waiting)`);
  }
  return moved;
}

/** The free slots, on the nodes that have the model on disk and room for it, of those with none of its requests waiting. */
function spareSlots(registry: Registry, queues: Queues, from: string, model: string): number {
  return registry
    .all()
    .filter((n) => n.id !== from && n.status === "online" && !registry.isDraining(n) && n.ollama?.reachable && onDisk(n, model) && fits(registry, n, model))
    .reduce((free, n) => {
      const there = queues.view(n.id, model);
      return free + (there.pending ? 0 : Math.max(0, registry.parallel(n.id) - there.inFlight));
    }, 0);
}

/**
 * How many of the newest of `most` waiters on `from` to move: one at a time, while the last of them would finish
 * at least SPILL_MIN_MS later there than on another node that has the model loaded, each move counted in both queues.
 */
export function soonerElsewhere(from: string, { candidates, request }: { candidates: readonly FinishCandidate[]; request: FinishRequest }, most: number): number {
  let home = candidates.find((c) => c.nodeId === from && c.resident);
  if (!home) return 0;
  const hot = candidates.filter((c) => c.nodeId !== from && c.resident);
  let moved = 0;
  for (; moved < most && home.queue.pending > 0; moved++) {
    home = withPending(home, -1);
    const last = estimateFinish(home, request);
    if ("excluded" in last) break;
    let best = -1;
    let bestMs = last.ms - SPILL_MIN_MS;
    for (const [i, c] of hot.entries()) {
      const e = estimateFinish(c, request);
      if (!("excluded" in e) && e.ms <= bestMs) [best, bestMs] = [i, e.ms];
    }
    if (best < 0) break;
    hot[best] = joined(hot[best]!);
  }
  return moved;
}

const withPending = <C extends FinishCandidate>(c: C, more: number): C => ({ ...c, queue: { ...c.queue, pending: c.queue.pending + more } });
/** The candidate with one more request: on a free slot, else waiting. */
const joined = <C extends FinishCandidate>(c: C): C => (c.queue.inFlight < c.slots ? { ...c, queue: { ...c.queue, inFlight: c.queue.inFlight + 1 } } : withPending(c, 1));

/** The prompt the estimate takes for a queue's requests to come: the mean of those it served (nothing yet: the reply alone). */
function typicalPrompt(q: ReturnType<Queues["entries"]>[number]): number {
  return q.usage.samples ? q.usage.promptTokens / q.usage.samples : 0;
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
    const { candidates, request } = sources.inputs(q.model, typicalPrompt(q));
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
    rebalance(registry, queues, config(), replicas.inputs);
    timer = setTimeout(loop, config().rebalancer.intervalMs);
  };
  timer = setTimeout(loop, config().rebalancer.intervalMs);
  return { stop: () => timer && clearTimeout(timer) };
}
