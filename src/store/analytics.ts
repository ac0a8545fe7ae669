// Read-only aggregates over the traces for the dashboard. Each query takes the
// store and the start of its window (unix seconds); db.query() compiles a
// statement once per store and reuses it. Days and hours are UTC; latencies and
// token averages are rounded to 0.1. A trace counts as failed unless completed.
// Traces pruned by store.traces' retention live on summed per day (trace_days,
// tag_days; store/retention.ts): every daily and all-time figure reads both, so
// it survives pruning; the hourly trends and the recent traces read the rows kept.
import type { Database } from "bun:sqlite";
import { OTHER_TAG } from "./day-tags.ts";
import type { Trace } from "./traces.ts";

/** A trace as the dashboard lists it: JSON columns decoded, fallback_used kept as 0/1. */
export type TraceView = Omit<Trace, "backend" | "kind" | "stream" | "queue_wait_ms" | "fallback_used"> & { fallback_used: number };

type TraceRow = Omit<TraceView, "scores_breakdown" | "prediction_breakdown" | "excluded_nodes" | "tags" | "adjustments"> & {
  adjustments: string | null;
  scores_breakdown: string | null;
  prediction_breakdown: string | null;
  excluded_nodes: string | null;
  tags: string | null;
};

interface Totals {
  avg_latency_ms: number | null;
  total_prompt_tokens: number;
  total_completion_tokens: number;
}

const day = (timestamp: string) => `date(${timestamp}, 'unixepoch')`;

// Without table statistics SQLite prefers scanning a (model|tag, timestamp) index whole to save a sort;
// a dashboard window is a small slice of the history, so the time indexes are named outright.
const TRACES_SINCE = "FROM traces INDEXED BY traces_time WHERE timestamp >= ?";

/** Per node, model and day since ?1: each trace kept as a group of one, beside the days pruned (a day counts whole once it is in the window). */
export const USAGE_SINCE = `FROM (
  SELECT node_id, model, ${day("timestamp")} AS day, 1 AS requests, status = 'completed' AS completed, prompt_tokens,
    completion_tokens, latency_ms AS latency_sum, latency_ms IS NOT NULL AS latency_count, timestamp AS last_used
  FROM traces INDEXED BY traces_time WHERE timestamp >= ?1
  UNION ALL
  SELECT NULLIF(node_id, ''), model, day, requests, completed, prompt_tokens, completion_tokens, latency_sum, latency_count, last_used
  FROM trace_days WHERE day >= ${day("?1")})`;

/** Per tag and day since ?1, in the same way: one trace_tags row per tag, so a trace with two tags counts once under each. */
const TAGS_SINCE = `FROM (
  SELECT tt.tag, ${day("tt.timestamp")} AS day, 1 AS requests, t.status <> 'completed' AS failed, t.prompt_tokens,
    t.completion_tokens, t.latency_ms AS latency_sum, t.latency_ms IS NOT NULL AS latency_count,
    t.time_to_first_token_ms AS ttft_sum, t.time_to_first_token_ms IS NOT NULL AS ttft_count
  FROM trace_tags tt INDEXED BY trace_tags_time JOIN traces t ON t.request_id = tt.request_id WHERE tt.timestamp >= ?1
  UNION ALL
  SELECT tag, day, requests, failed, prompt_tokens, completion_tokens, latency_sum, latency_count, ttft_sum, ttft_count
  FROM tag_days WHERE day >= ${day("?1")})`;

// Token columns are NULL on failures; a group of only failures totals 0, not null.
const PROMPT_TOKENS = "COALESCE(SUM(prompt_tokens), 0)";
const COMPLETION_TOKENS = "COALESCE(SUM(completion_tokens), 0)";
const mean = (sum: string, count: string) => `ROUND(SUM(${sum}) / NULLIF(SUM(${count}), 0), 1)`;
const AVG_LATENCY = mean("latency_sum", "latency_count");
const TOTALS = `${AVG_LATENCY} AS avg_latency_ms, ${PROMPT_TOKENS} AS total_prompt_tokens, ${COMPLETION_TOKENS} AS total_completion_tokens`;

export function recentTraces(db: Database, limit: number): TraceView[] {
  const rows = db
    .query<TraceRow, [number]>(
      `SELECT request_id, model, original_model, node_id, score, scores_breakdown, predicted_ms, prediction_breakdown, status, latency_ms, time_to_first_token_ms,
        prompt_tokens, completion_tokens, retry_count, fallback_used, excluded_nodes, client_ip, original_format, error_message,
        timestamp, tags, resolution, adjustments
      FROM traces ORDER BY timestamp DESC LIMIT ?`,
    )
    .all(limit);
  return rows.map((r) => ({
    ...r,
    scores_breakdown: r.scores_breakdown === null ? null : JSON.parse(r.scores_breakdown),
    prediction_breakdown: r.prediction_breakdown === null ? null : JSON.parse(r.prediction_breakdown),
    excluded_nodes: JSON.parse(r.excluded_nodes ?? "[]"),
    tags: JSON.parse(r.tags ?? "[]"),
    adjustments: JSON.parse(r.adjustments ?? "[]"),
  }));
}

/** All-time totals: the header cards have no window. */
export function overview(db: Database) {
  return db
    .query<{ total_requests: number; total_prompt_tokens: number; total_completion_tokens: number; total_tokens: number; models_count: number }, [number]>(
      `SELECT COALESCE(SUM(requests), 0) AS total_requests, ${PROMPT_TOKENS} AS total_prompt_tokens, ${COMPLETION_TOKENS} AS total_completion_tokens,
        ${PROMPT_TOKENS} + ${COMPLETION_TOKENS} AS total_tokens, COUNT(DISTINCT model) AS models_count
      ${USAGE_SINCE}`,
    )
    .get(0)!;
}

export function usageByNodeModelDay(db: Database, since: number) {
  return db
    .query<{ node_id: string | null; model: string; day: string; request_count: number; completed: number; failed: number } & Totals, [number]>(
      `SELECT node_id, model, day, SUM(requests) AS request_count, SUM(completed) AS completed,
        SUM(requests - completed) AS failed, ${TOTALS}
      ${USAGE_SINCE}
      GROUP BY node_id, model, day ORDER BY day, node_id, model`,
    )
    .all(since);
}

export function modelsDaily(db: Database, since: number) {
  return db
    .query<{ model: string; day: string; request_count: number } & Totals, [number]>(
      `SELECT model, day, SUM(requests) AS request_count, ${TOTALS}
      ${USAGE_SINCE}
      GROUP BY model, day ORDER BY day, model`,
    )
    .all(since);
}

export function modelsSummary(db: Database, since: number) {
  return db
    .query<{ model: string; total_requests: number } & Totals, [number]>(
      `SELECT model, SUM(requests) AS total_requests, ${TOTALS}
      ${USAGE_SINCE}
      GROUP BY model ORDER BY total_requests DESC, model`,
    )
    .all(since);
}

export function hourlyTrends(db: Database, since: number) {
  return db
    .query<{ hour_bucket: string; request_count: number; avg_latency_ms: number | null; avg_prompt_tokens: number | null; avg_completion_tokens: number | null }, [number]>(
      `SELECT strftime('%Y-%m-%d %H:00:00', timestamp, 'unixepoch') AS hour_bucket, COUNT(*) AS request_count,
        ROUND(AVG(latency_ms), 1) AS avg_latency_ms, ROUND(AVG(prompt_tokens), 1) AS avg_prompt_tokens,
        ROUND(AVG(completion_tokens), 1) AS avg_completion_tokens
      ${TRACES_SINCE}
      GROUP BY hour_bucket ORDER BY hour_bucket`,
    )
    .all(since);
}

/** The tags /apps lists by name, busiest first, and /apps/daily per day: the rest of the window's are summed under OTHER_TAG, so an answer stays small whatever the store holds. */
export const APPS_LISTED = 100;
export const APPS_DAILY = 20;

export function appsByTag(db: Database, since: number) {
  return db
    .query<{ tag: string; request_count: number; avg_ttft_ms: number | null; error_rate: number } & Totals, [number, number]>(
      `WITH per_tag AS (
        SELECT tag, SUM(requests) AS requests, SUM(failed) AS failed, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
          SUM(latency_sum) AS latency_sum, SUM(latency_count) AS latency_count, SUM(ttft_sum) AS ttft_sum, SUM(ttft_count) AS ttft_count
        ${TAGS_SINCE} GROUP BY tag
      ), ranked AS (SELECT *, ROW_NUMBER() OVER (ORDER BY tag = '${OTHER_TAG}', requests DESC, tag) AS rank FROM per_tag),
      shown AS (SELECT *, CASE WHEN rank <= ?2 THEN tag ELSE '${OTHER_TAG}' END AS shown FROM ranked)
      SELECT shown AS tag, SUM(requests) AS request_count, ${TOTALS},
        ${mean("ttft_sum", "ttft_count")} AS avg_ttft_ms, ROUND(CAST(SUM(failed) AS REAL) / SUM(requests), 4) AS error_rate
      FROM shown GROUP BY shown ORDER BY shown = '${OTHER_TAG}', request_count DESC, shown`,
    )
    .all(since, APPS_LISTED);
}

export function appsDaily(db: Database, since: number) {
  return db
    .query<{ tag: string; day: string; request_count: number; avg_latency_ms: number | null; total_tokens: number }, [number, number]>(
      `WITH top AS (SELECT tag ${TAGS_SINCE} WHERE tag <> '${OTHER_TAG}' GROUP BY tag ORDER BY SUM(requests) DESC, tag LIMIT ?2),
      shown AS (SELECT *, CASE WHEN tag IN top THEN tag ELSE '${OTHER_TAG}' END AS shown ${TAGS_SINCE})
      SELECT shown AS tag, day, SUM(requests) AS request_count, ${AVG_LATENCY} AS avg_latency_ms, ${PROMPT_TOKENS} + ${COMPLETION_TOKENS} AS total_tokens
      FROM shown GROUP BY shown, day ORDER BY day, shown`,
    )
    .all(since, APPS_DAILY);
}
