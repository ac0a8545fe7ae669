// Request traces: one row per request, success or failure, written off the hot
// path. Rows are queued in memory and written in one transaction per batch;
// close() flushes whatever is left, so an acknowledged trace survives a stop.
import type { Database, Statement } from "bun:sqlite";
import { log } from "../log.ts";

export type TraceStatus = "completed" | "failed" | "incomplete" | "client_disconnected" | "rejected";

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
  score: number | null;
  scores_breakdown: Record<string, number> | null;
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

const FLUSH_MS = 250;
const BATCH = 200;

export class TraceWriter {
  private pending: Trace[] = [];
  private timer: Timer | null = null;
  private readonly insertTrace: Statement;
  private readonly insertTag: Statement;

  constructor(private readonly db: Database) {
    this.insertTrace = db.prepare(`INSERT OR IGNORE INTO traces (request_id, timestamp, model, original_model, node_id, backend, kind,
      original_format, stream, status, score, scores_breakdown, latency_ms, time_to_first_token_ms, queue_wait_ms, prompt_tokens,
      completion_tokens, retry_count, fallback_used, excluded_nodes, client_ip, error_message, tags, resolution, adjustments)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertTag = db.prepare("INSERT INTO trace_tags (request_id, tag, timestamp) VALUES (?, ?, ?)");
  }

  record(trace: Trace): void {
    this.pending.push(trace);
    if (this.pending.length >= BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending.splice(0);
    if (!batch.length) return;
    try {
      this.db.transaction(() => {
        for (const t of batch) {
          const { changes } = this.insertTrace.run(
            t.request_id, t.timestamp, t.model, t.original_model, t.node_id, t.backend, t.kind, t.original_format, t.stream ? 1 : 0,
            t.status, t.score, t.scores_breakdown && JSON.stringify(t.scores_breakdown), t.latency_ms, t.time_to_first_token_ms,
            t.queue_wait_ms, t.prompt_tokens, t.completion_tokens, t.retry_count, t.fallback_used ? 1 : 0,
            JSON.stringify(t.excluded_nodes), t.client_ip, t.error_message, JSON.stringify(t.tags), t.resolution,
            JSON.stringify(t.adjustments),
          );
          // A request id is recorded once; its tags with it.
          if (changes) for (const tag of t.tags) this.insertTag.run(t.request_id, tag, t.timestamp);
        }
      })();
    } catch (e) {
      // Routing must go on when the disk is full or read-only; the traces of this batch are lost, and said so.
      log.error(`could not write ${batch.length} trace(s): ${(e as Error).message}`);
    }
  }

  close(): void {
    this.flush();
  }
}
