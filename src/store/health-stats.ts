// What the health checks read from the traces: per-model traffic of a recent
// window (failures, timeouts, retries) and the token counts of answered
// requests (for context usage). Windows start at a unix time in seconds.
import type { Database } from "bun:sqlite";

/** One model's requests in the window; embeddings apart from chat and generate. */
export interface ModelTraffic {
  model: string;
  embed: boolean;
  requests: number;
  /** Ended in error: failed, or a stream cut short. */
  failed: number;
  /** Failed because a node or a queue did not answer in time. */
  timeouts: number;
  /** Nodes tried in vain before the one that answered (a failed request's tries count as its failure instead). */
  retries: number;
}

export interface TokenRow {
  model: string;
  timestamp: number;
  prompt_tokens: number;
  completion_tokens: number;
}

// The router's own timeout messages (src/backends/ollama.ts, src/backends/lines.ts, src/router/dispatch.ts):
// a trace keeps the message, not a cause code.
const TIMED_OUT = ["no answer within", "no free slot within", "no whole line from the node for"]
  .map((text) => `error_message LIKE '%${text}%'`)
  .join(" OR ");

/**
 * Requests the fleet is answerable for: a client's own cap (rejected) or hang-up
 * (client_disconnected) says nothing about the nodes.
 */
export function trafficByModel(db: Database, since: number): ModelTraffic[] {
  return db
    .query<Omit<ModelTraffic, "embed"> & { embed: number }, [number]>(
      `SELECT model, kind = 'embed' AS embed, COUNT(*) AS requests, SUM(status IN ('failed', 'incomplete')) AS failed,
        SUM(status <> 'completed' AND (${TIMED_OUT})) AS timeouts, SUM(CASE WHEN status = 'completed' THEN retry_count ELSE 0 END) AS retries
      FROM traces INDEXED BY traces_time
      WHERE timestamp >= ? AND status NOT IN ('rejected', 'client_disconnected')
      GROUP BY model, embed ORDER BY model`,
    )
    .all(since)
    .map((r) => ({ ...r, embed: r.embed === 1 }));
}

/** Token counts of every answered chat or generate request in the window. */
export function tokenRows(db: Database, since: number): TokenRow[] {
  return db
    .query<TokenRow, [number]>(
      `SELECT model, timestamp, prompt_tokens, COALESCE(completion_tokens, 0) AS completion_tokens
      FROM traces INDEXED BY traces_time
      WHERE timestamp >= ? AND status = 'completed' AND kind IN ('chat', 'generate') AND prompt_tokens IS NOT NULL`,
    )
    .all(since);
}
