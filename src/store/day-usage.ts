// One UTC day's use of each model on this herd's nodes, for the daily usage
// roll-up (docs/platform.md). Only requests a node ran count (a request refused
// before any node took it is not local use). A day already pruned into trace_days
// keeps its counts, tokens and mean latency but not its p95 (null) or its per-model
// tags (tag_days is per tag alone).
import type { Database } from "bun:sqlite";
import { percentile, sorted } from "../percentile.ts";

export interface ModelDay {
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  avg_latency_ms: number | null;
  p95_latency_ms: number | null;
  requests_by_tag: Record<string, number>;
}

const DAY_S = 86400;

const TOTALS = `SELECT model, SUM(requests) AS requests, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
    COALESCE(SUM(completion_tokens), 0) AS completion_tokens, ROUND(SUM(latency_sum) / NULLIF(SUM(latency_count), 0), 1) AS avg_latency_ms
  FROM (
    SELECT model, 1 AS requests, prompt_tokens, completion_tokens, latency_ms AS latency_sum, latency_ms IS NOT NULL AS latency_count
    FROM traces INDEXED BY traces_time WHERE timestamp >= ?1 AND timestamp < ?2 AND node_id IS NOT NULL
    UNION ALL
    SELECT model, requests, prompt_tokens, completion_tokens, latency_sum, latency_count FROM trace_days WHERE day = ?3 AND node_id <> ''
  ) GROUP BY model ORDER BY model`;

const LATENCIES = `SELECT model, latency_ms FROM traces INDEXED BY traces_time
  WHERE timestamp >= ?1 AND timestamp < ?2 AND node_id IS NOT NULL AND latency_ms IS NOT NULL`;

const TAGS = `SELECT t.model, tt.tag, COUNT(*) AS requests FROM trace_tags tt JOIN traces t ON t.request_id = tt.request_id
  WHERE tt.timestamp >= ?1 AND tt.timestamp < ?2 AND t.node_id IS NOT NULL GROUP BY t.model, tt.tag ORDER BY tt.tag`;

/** `day`: YYYY-MM-DD (UTC). Models in name order. */
export function dayUsage(db: Database, day: string): ModelDay[] {
  const start = Date.parse(`${day}T00:00:00Z`) / 1000;
  const window = [start, start + DAY_S] as const;
  const latencies = new Map<string, number[]>();
  for (const row of db.query<{ model: string; latency_ms: number }, [number, number]>(LATENCIES).all(...window)) {
    latencies.set(row.model, [...(latencies.get(row.model) ?? []), row.latency_ms]);
  }
  const tags = new Map<string, Record<string, number>>();
  for (const row of db.query<{ model: string; tag: string; requests: number }, [number, number]>(TAGS).all(...window)) {
    tags.set(row.model, { ...tags.get(row.model), [row.tag]: row.requests });
  }
  type Totals = Omit<ModelDay, "p95_latency_ms" | "requests_by_tag">;
  return db.query<Totals, [number, number, string]>(TOTALS).all(...window, day).map((totals) => {
    const measured = latencies.get(totals.model);
    return {
      ...totals,
      p95_latency_ms: measured ? Math.round(percentile(sorted(measured), 0.95) * 10) / 10 : null,
      requests_by_tag: tags.get(totals.model) ?? {},
    };
  });
}
