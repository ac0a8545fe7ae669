// Request traces: one row per request, success or failure, written off the hot
// path: rows are queued in memory and written by a worker thread, one
// transaction per batch.
import type { Database } from "bun:sqlite";
import { log } from "../log.ts";
import type { Retention } from "./retention.ts";
import { OTHER_MODEL } from "../core/client-names.ts";
import { DayTags } from "./day-tags.ts";

export type TraceStatus = "completed" | "failed" | "incomplete" | "client_disconnected" | "rejected";

/**
 * A new trace's request id: a UUID that is ordered by time (v7), so each trace appends to the end of the store's key
 * index instead of landing on a random page of it; random ids made every write dearer as the store grew (20 µs per
 * trace at 20,000 traces, 47 µs at 100,000; time-ordered: 8 µs throughout).
 */
export function newRequestId(): string {
  return Bun.randomUUIDv7();
}

export interface Trace {
  request_id: string;
  timestamp: number;
  model: string;
  original_model: string;
  node_id: string | null;
  backend: string | null;
  kind: string;
  original_format: string;
  stream: boolean;
  status: TraceStatus;
  /** Seed 000's routing score (higher = better fit) and its parts, in points. */
  score: number | null;
  scores_breakdown: Record<string, number> | null;
  /** The finish-time estimate the ranking read, in ms, and its parts; null under the other strategies. */
  predicted_ms: number | null;
  prediction_breakdown: Record<string, number> | null;
  latency_ms: number | null;
  time_to_first_token_ms: number | null;
  queue_wait_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  retry_count: number;
  fallback_used: boolean;
  excluded_nodes: string[];
  client_ip: string | null;
  error_message: string | null;
  tags: string[];
  /** How the requested id became the model that ran, when it was not a plain model name. */
  resolution: string | null;
  /** What herd changed about the request on its way (context cleared, num_ctx stripped, …). */
  adjustments: string[];
}

const FLUSH_MS = 50;
const BATCH = 200;
/** How long a stop waits for the worker to write what it was handed. */
const CLOSE_WAIT_MS = 10_000;
// Inside the compiled binary every bundled module reports the entry's URL, and the worker (an entrypoint
// of its own, see compile/build.ts) sits at its path under src/; from source it sits beside this file.
const WORKER = import.meta.url.includes("/$bunfs/") ? "./store/trace-worker.ts" : new URL("./trace-worker.ts", import.meta.url).href;

/** What the worker reports after each batch, and once it has closed the store. */
export type WorkerReport = { wrote: number } | { lost: number; error: string } | { pruned: number } | "closed";

/** How the writes have gone since start (ms epoch times): the store_writable health check reads it. */
export interface TraceWrites {
  file: string;
  written: number;
  /** Traces deleted past store.traces' retention (their days summed in the roll-ups). */
  pruned: number;
  /** Traces the store refused (disk full, read-only, gone): they are lost. */
  lost: number;
  lastWriteAt: number | null;
  lastError: { message: string; at: number } | null;
}

/**
 * Queues traces and hands them in batches to a worker thread that owns its own connection to the
 * store, so no request ever waits on SQLite. close() hands over the rest and waits until the worker
 * has written it: an acknowledged trace survives a stop.
 */
export class TraceWriter {
  /**
   * Requests counted since start, by outcome, model and node: what /metrics counts (no query over the store). A model
   * is named only when a node served it or the fleet knows it (`knownModel`); any other name counts as OTHER_MODEL.
   */
  readonly outcomes = new Map<string, { status: TraceStatus; model: string; node: string; count: number }>();
  private pending: Trace[] = [];
  /** Who reads each batch of finished rows (the OTLP export): none unless configured, so a flush costs nothing more. */
  private readonly watchers = new Set<(rows: Trace[]) => void>();
  private timer: Timer | null = null;
  private readonly worker: Worker;
  private closed: Promise<void> | null = null;
  private readonly writes: TraceWrites;

  constructor(
    file: string,
    private readonly knownModel: (model: string) => boolean,
    /** store.traces, read at each write: a reload applies to the next one. */
    private readonly retention: () => Retention,
  ) {
    this.writes = { file, written: 0, pruned: 0, lost: 0, lastWriteAt: null, lastError: null };
    this.worker = new Worker(WORKER);
    this.worker.addEventListener("error", (e) => log.error(`the trace writer failed: ${e.message}`));
    this.worker.addEventListener("message", ({ data }: MessageEvent<WorkerReport>) => this.count(data));
    this.worker.postMessage({ open: file, keep: retention() });
  }

  health(): TraceWrites {
    return { ...this.writes };
  }

  private count(report: WorkerReport): void {
    if (report === "closed") return;
    if ("pruned" in report) this.writes.pruned += report.pruned;
    else if ("wrote" in report) {
      this.writes.written += report.wrote;
      this.writes.lastWriteAt = Date.now();
    } else {
      this.writes.lost += report.lost;
      this.writes.lastError = { message: report.error, at: Date.now() };
    }
  }

  /** Counts a request in /metrics without a row in the store: a refusal that must not cost storage (admission's 429). */
  tally(trace: Trace): void {
    const model = this.countedModel(trace);
    const key = `${trace.status}\n${model}\n${trace.node_id ?? ""}`;
    const outcome = this.outcomes.get(key);
    if (outcome) outcome.count++;
    else this.outcomes.set(key, { status: trace.status, model, node: trace.node_id ?? "", count: 1 });
  }

  /** The model a row is counted under: named only when a node served it or the fleet knows it, so a client's made-up names cannot grow the figures. */
  countedModel(trace: Trace): string {
    return trace.node_id || this.knownModel(trace.model) ? trace.model : OTHER_MODEL;
  }

  /** Hands `watcher` each batch of recorded rows, when it goes to the store (off the request path); returns its removal. */
  watch(watcher: (rows: Trace[]) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  record(trace: Trace): void {
    this.tally(trace);
    this.pending.push(trace);
    if (this.pending.length >= BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // One JSON string crosses to the worker far cheaper than a structured clone of each trace.
    if (!this.pending.length) return;
    const rows = this.pending.splice(0);
    this.worker.postMessage({ batch: JSON.stringify(rows), keep: this.retention() });
    for (const watcher of this.watchers) watcher(rows);
  }

  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.worker.terminate();
        resolve();
      };
      // A worker that died or hangs must not keep the router from exiting.
      const timer = setTimeout(() => {
        log.error(`the trace writer did not finish within ${CLOSE_WAIT_MS} ms; traces not yet written are lost`);
        done();
      }, CLOSE_WAIT_MS);
      this.worker.addEventListener("message", ({ data }: MessageEvent<WorkerReport>) => data === "closed" && done());
      this.worker.addEventListener("error", done);
      this.flush();
      this.worker.postMessage({ close: true });
    });
    return this.closed;
  }
}

/**
 * Writes a batch in one transaction; the worker's half of TraceWriter. A trace's tags are kept as its day allows
 * (`maxTagsPerDay`, day-tags.ts), in its row and its trace_tags alike.
 */
export function traceInserter(db: Database): (batch: Trace[], maxTagsPerDay: number) => void {
  const insertTrace = db.prepare(`INSERT OR IGNORE INTO traces (request_id, timestamp, model, original_model, node_id, backend, kind,
    original_format, stream, status, score, scores_breakdown, latency_ms, time_to_first_token_ms, queue_wait_ms, prompt_tokens,
    completion_tokens, retry_count, fallback_used, excluded_nodes, client_ip, error_message, tags, resolution, adjustments,
    predicted_ms, prediction_breakdown)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insertTag = db.prepare("INSERT INTO trace_tags (request_id, tag, timestamp) VALUES (?, ?, ?)");
  const dayTags = new DayTags(db);
  return db.transaction((batch: Trace[], maxTagsPerDay: number) => {
    for (const t of batch) {
      const tags = dayTags.keep(t.timestamp, t.tags, maxTagsPerDay);
      const { changes } = insertTrace.run(
        t.request_id, t.timestamp, t.model, t.original_model, t.node_id, t.backend, t.kind, t.original_format, t.stream ? 1 : 0,
        t.status, t.score, t.scores_breakdown && JSON.stringify(t.scores_breakdown), t.latency_ms, t.time_to_first_token_ms,
        t.queue_wait_ms, t.prompt_tokens, t.completion_tokens, t.retry_count, t.fallback_used ? 1 : 0,
        JSON.stringify(t.excluded_nodes), t.client_ip, t.error_message, JSON.stringify(tags), t.resolution,
        JSON.stringify(t.adjustments), t.predicted_ms, t.prediction_breakdown && JSON.stringify(t.prediction_breakdown),
      );
      // A request id is recorded once; its tags with it.
      if (changes) for (const tag of tags) insertTag.run(t.request_id, tag, t.timestamp);
    }
  });
}
