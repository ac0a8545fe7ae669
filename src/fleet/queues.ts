// One queue per node:model. At most `concurrency` requests run at once (the
// node's Ollama parallelism); the rest wait in order. The counts are exact:
// every acquired slot is released once, whatever happened to its request.
import { NodeLoads } from "./node-loads.ts";
import type { QueueView } from "./scorer.ts";

export type Outcome = "completed" | "failed";

/** A waiting request taken off its queue (`why`: by the rebalancer, or its model is being evicted there): it should be routed again. */
export class Moved extends Error {
  constructor(
    readonly from: string,
    why: string,
    /** Its model leaves that node (a load there evicts it): the node is not the worse for it, and may take the request back once it loads the model again. */
    readonly evicted: boolean,
  ) {
    super(`moved off ${from} ${why}`);
  }
}

/** Admission control: the queue already holds its most waiting requests. */
export class QueueFull extends Error {
  constructor(readonly maxPending: number) {
    super(`${maxPending} requests already waiting`);
  }
}

/** No slot came free within the wait allowed. */
export class SlotTimeout extends Error {
  constructor(readonly waitMs: number) {
    super(`no free slot within ${waitMs} ms`);
  }
}

interface Waiter {
  turn(): void;
  move(why: string, evicted: boolean): void;
}

export interface Slot {
  /** Milliseconds the request waited for its slot. */
  waitedMs: number;
  /** When it got the slot (performance.now()): the request goes to the node now. */
  takenAt: number;
  /** Requests running on the node:model besides this one when it got the slot. */
  othersInFlight: number;
  release(outcome: Outcome, latencyMs?: number): void;
}

interface Queue {
  nodeId: string;
  model: string;
  concurrency: number;
  inFlight: number;
  waiters: Waiter[];
  completed: number;
  /** Waiting requests the rebalancer moved to another node. */
  moved: number;
  failed: number;
  /** For estimates: starts at a prior, so an unmeasured queue is not taken for an instant one. */
  avgLatencyMs: number;
  /** For display: completed requests' latency only; null until one has completed. */
  measuredLatencyMs: number | null;
  lastDispatchAt: number;
  /** When each request now running got its slot, oldest first (a Set keeps insertion order). */
  running: Set<{ since: number }>;
  /** The prompt tokens of the requests waiting and running there: the estimate's work ahead (fleet/finish-time.ts). */
  promptTokens: number;
  /** The admission cap on waiting requests, for queues that have one (MLX servers). */
  maxPending: number | null;
  usage: UsageTotals;
}

/** Token counts of the finished answers a backend reported (MLX servers report their prompt cache too). */
export interface UsageTotals {
  samples: number;
  /** Summed durations of those answers, from slot to last byte. */
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** Answers whose prompt had nothing cached, and the prompt tokens of the others, cached or not. */
  coldRequests: number;
  warmPromptTokens: number;
  warmCachedTokens: number;
}

/** Latency estimate before a queue has seen a request. */
const DEFAULT_LATENCY_MS = 5000;
/** Weight of the newest sample in the running latency average. */
const EWMA = 0.2;

const blend = (average: number, sample: number) => average * (1 - EWMA) + sample * EWMA;

export class Queues {
  private queues = new Map<string, Queue>();
  /** Beside the node:model queues, the one inside each node that its loads wait in. */
  readonly loads = new NodeLoads();

  static key(nodeId: string, model: string): string {
    return `${nodeId}:${model}`;
  }

  /**
   * Waits for a free slot on node:model: rejects with SlotTimeout after `waitMs`, or with the
   * signal's reason if it aborts first. A free slot is taken at once, with no timer at all.
   * With `maxPending`, a request that would wait behind that many others is refused at once (QueueFull).
   * `promptTokens`: the request's, counted in the queue's while it waits and runs there.
   */
  acquire(nodeId: string, model: string, concurrency: number, waitMs: number, signal?: AbortSignal, maxPending?: number, promptTokens = 0): Slot | Promise<Slot> {
    // A client already gone takes no slot, free or not: nothing would read the answer.
    if (signal?.aborted) return Promise.reject(signal.reason);
    const q = this.queue(nodeId, model);
    q.concurrency = concurrency;
    q.maxPending = maxPending ?? null;
    this.wakeWaiters(q); // a raised limit lets more through at once
    const queuedAt = performance.now();
    // A free slot is handed over at once, not a turn of the event loop later.
    if (q.inFlight < q.concurrency && !q.waiters.length) {
      q.inFlight++;
      q.promptTokens += promptTokens;
      return this.slot(q, queuedAt, promptTokens);
    }
    if (maxPending !== undefined && q.waiters.length >= maxPending) return Promise.reject(new QueueFull(maxPending));
    q.promptTokens += promptTokens;
    // The slot is taken for us when our turn comes.
    return this.wait(q, waitMs, signal).then(
      () => this.slot(q, queuedAt, promptTokens),
      (e) => {
        q.promptTokens -= promptTokens;
        throw e;
      },
    );
  }

  /** The slot a request took on `q` (its inFlight and prompt already counted). */
  private slot(q: Queue, queuedAt: number, promptTokens: number): Slot {
    q.lastDispatchAt = Date.now();
    const running = { since: q.lastDispatchAt };
    q.running.add(running);
    let released = false;
    const takenAt = performance.now();
    return {
      waitedMs: takenAt - queuedAt,
      takenAt,
      othersInFlight: q.inFlight - 1,
      release: (outcome, latencyMs) => {
        if (released) return;
        released = true;
        q.running.delete(running);
        q.inFlight--;
        q.promptTokens -= promptTokens;
        q[outcome]++;
        if (latencyMs !== undefined && outcome === "completed") {
          q.avgLatencyMs = blend(q.avgLatencyMs, latencyMs);
          q.measuredLatencyMs = q.measuredLatencyMs === null ? latencyMs : blend(q.measuredLatencyMs, latencyMs);
        }
        this.wakeWaiters(q);
      },
    };
  }

  /** Adds one finished answer's token counts to node:model's totals. */
  recordUsage(nodeId: string, model: string, usage: { latencyMs: number; promptTokens: number; completionTokens: number; cachedTokens: number }): void {
    const u = this.queue(nodeId, model).usage;
    u.samples++;
    u.latencyMs += usage.latencyMs;
    u.promptTokens += usage.promptTokens;
    u.completionTokens += usage.completionTokens;
    u.cachedTokens += usage.cachedTokens;
    if (usage.cachedTokens > 0) {
      u.warmPromptTokens += usage.promptTokens;
      u.warmCachedTokens += usage.cachedTokens;
    } else u.coldRequests++;
  }

  view(nodeId: string, model: string): QueueView {
    const q = this.queues.get(Queues.key(nodeId, model));
    return q
      ? { pending: q.waiters.length, inFlight: q.inFlight, concurrency: q.concurrency, avgLatencyMs: q.avgLatencyMs, lastDispatchAt: q.lastDispatchAt, promptTokens: q.promptTokens }
      : { pending: 0, inFlight: 0, concurrency: 1, avgLatencyMs: DEFAULT_LATENCY_MS, lastDispatchAt: 0, promptTokens: 0 };
  }

  /** When the longest-running request on node:model got its slot (ms epoch), or null when none runs. */
  oldestRunningSince(nodeId: string, model: string): number | null {
    const q = this.queues.get(Queues.key(nodeId, model));
    for (const r of q?.running ?? []) return r.since;
    return null;
  }

  /** Requests running or waiting on a node, across its models. */
  nodeLoad(nodeId: string): { pending: number; inFlight: number } {
    let pending = 0;
    let inFlight = 0;
    for (const q of this.queues.values()) {
      if (q.nodeId !== nodeId) continue;
      pending += q.waiters.length;
      inFlight += q.inFlight;
    }
    return { pending, inFlight };
  }

  /** The models with requests running on the node now: each is loaded there, or loading. */
  runningModels(nodeId: string): string[] {
    const models: string[] = [];
    for (const q of this.queues.values()) if (q.nodeId === nodeId && q.inFlight > 0) models.push(q.model);
    return models;
  }

  /** Every queue in the shape of /fleet/status and /fleet/queue. */
  entries(): {
    key: string;
    node_id: string;
    model: string;
    pending: number;
    in_flight: number;
    completed: number;
    failed: number;
    rebalanced: number;
    concurrency: number;
    /** Measured only: null until a request has completed (estimates read view()). */
    avg_latency_ms: number | null;
    max_queue_depth: number | null;
    usage: UsageTotals;
  }[] {
    return [...this.queues.entries()].map(([key, q]) => ({
      key,
      node_id: q.nodeId,
      model: q.model,
      pending: q.waiters.length,
      in_flight: q.inFlight,
      completed: q.completed,
      failed: q.failed,
      rebalanced: q.moved,
      concurrency: q.concurrency,
      avg_latency_ms: q.measuredLatencyMs === null ? null : Math.round(q.measuredLatencyMs * 10) / 10,
      max_queue_depth: q.maxPending,
      usage: { ...q.usage },
    }));
  }

  private queue(nodeId: string, model: string): Queue {
    const key = Queues.key(nodeId, model);
    let q = this.queues.get(key);
    if (!q) {
      q = {
        nodeId,
        model,
        concurrency: 1,
        inFlight: 0,
        waiters: [],
        completed: 0,
        failed: 0,
        moved: 0,
        avgLatencyMs: DEFAULT_LATENCY_MS,
        measuredLatencyMs: null,
        lastDispatchAt: 0,
        running: new Set(),
        promptTokens: 0,
        maxPending: null,
        usage: { samples: 0, latencyMs: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, coldRequests: 0, warmPromptTokens: 0, warmCachedTokens: 0 },
      };
      this.queues.set(key, q);
    }
    return q;
  }

  /** Takes up to `count` of the newest waiters off node:model (the oldest are next in line anyway), saying why; `evicted`: as its model leaves the node (Moved.evicted). */
  move(nodeId: string, model: string, count: number, why: string, evicted = false): number {
    const q = this.queues.get(Queues.key(nodeId, model));
    if (!q) return 0;
    const moved = q.waiters.splice(Math.max(0, q.waiters.length - count));
    for (const w of moved) w.move(why, evicted);
    q.moved += moved.length;
    return moved.length;
  }

  private wait(q: Queue, waitMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const settle = (error?: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (error) reject(error);
        else resolve();
      };
      const waiter: Waiter = { turn: () => settle(), move: (why, evicted) => settle(new Moved(q.nodeId, why, evicted)) };
      const leave = (error: Error) => {
        q.waiters.splice(q.waiters.indexOf(waiter), 1);
        settle(error);
      };
      const onAbort = () => leave(signal!.reason);
      const timer = setTimeout(() => leave(new SlotTimeout(waitMs)), waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      q.waiters.push(waiter);
    });
  }

  // Taking the slot here, not after the waiter resumes, keeps a newcomer from slipping in between.
  private wakeWaiters(q: Queue): void {
    while (q.inFlight < q.concurrency && q.waiters.length) {
      q.inFlight++;
      q.waiters.shift()!.turn();
    }
  }
}
