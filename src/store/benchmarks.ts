// Benchmark runs in seed 000's shape: saved by the dashboard's runner or posted by
// a benchmark script, listed newest first. The details (fleet snapshot, per-model,
// per-node, peak utilization) are JSON text, as the seed stores and sends them.
import type { Database } from "bun:sqlite";

export interface BenchmarkRun {
  run_id: string;
  timestamp: number;
  duration_s: number;
  total_requests: number;
  total_failures: number;
  total_prompt_tokens: number;
  total_completion_tokens: number;
  requests_per_sec: number;
  tokens_per_sec: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  latency_p99_ms: number | null;
  ttft_p50_ms: number | null;
  ttft_p95_ms: number | null;
  ttft_p99_ms: number | null;
  fleet_snapshot: string;
  per_model_results: string;
  per_node_results: string;
  peak_utilization: string;
}

const COLUMNS = [
  "run_id", "timestamp", "duration_s", "total_requests", "total_failures", "total_prompt_tokens", "total_completion_tokens",
  "requests_per_sec", "tokens_per_sec", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "ttft_p50_ms", "ttft_p95_ms",
  "ttft_p99_ms", "fleet_snapshot", "per_model_results", "per_node_results", "peak_utilization",
] as const satisfies readonly (keyof BenchmarkRun)[];

/** Stores a run; false when a run with that id is already stored (runs are never overwritten). */
export function saveRun(db: Database, run: BenchmarkRun): boolean {
  const sql = `INSERT OR IGNORE INTO benchmark_runs (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((c) => `$${c}`).join(", ")})`;
  return db.query(sql).run(Object.fromEntries(COLUMNS.map((c) => [c, run[c]]))).changes === 1;
}

export function listRuns(db: Database, limit: number): BenchmarkRun[] {
  return db.query<BenchmarkRun, [number]>(`SELECT ${COLUMNS.join(", ")} FROM benchmark_runs ORDER BY timestamp DESC, run_id DESC LIMIT ?`).all(limit);
}
