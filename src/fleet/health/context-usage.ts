// Context usage per model: the context window a model is loaded with against
// the tokens its requests really use, and the smaller window that would do.
// GET /dashboard/api/context-usage shows it; the context_waste check reads it.
import type { Database } from "bun:sqlite";
import { percentile } from "../../percentile.ts";
import { type TokenRow, tokenRows } from "../../store/health-stats.ts";
import { loadedContext, type Registry } from "../registry.ts";

export interface ContextUsage {
  model: string;
  /** The largest num_ctx the model is loaded with on an online node; null when it is not loaded. */
  allocated_ctx: number | null;
  /** A num_ctx forced by herd's config: herd has no such setting (clients' num_ctx is handled by features.contextProtection). */
  override_ctx: number | null;
  request_count: number;
  prompt_tokens: { avg: number; p50: number; p75: number; p95: number; p99: number; max: number };
  /** Prompt plus completion: what must fit in the window. */
  total_tokens: { p95: number; p99: number; max: number; max_24h: number | null };
  /** p99 total tokens as a share of the allocated window. */
  utilization_pct: number | null;
  recommended_ctx: number;
  /** How much smaller recommended_ctx is than allocated_ctx (0 when it is not). */
  savings_pct: number | null;
}

/** Room above the p99 request, so the recommendation does not cut off the next-longest ones. */
const HEADROOM = 2;
/** Never recommend less than Ollama's long-standing default. */
const MIN_CTX = 2048;
const DAY_S = 86_400;

/** The context usage of every model answered in the last `days`, busiest first. */
export function contextUsageReport(db: Database, registry: Registry, days: number, now = Date.now() / 1000): ContextUsage[] {
  return contextUsage(tokenRows(db, now - days * DAY_S), (model) => loadedContext(registry, model), now);
}

function contextUsage(rows: TokenRow[], allocatedCtx: (model: string) => number | undefined, now: number): ContextUsage[] {
  const byModel = Map.groupBy(rows, (r) => r.model);
  return [...byModel]
    .map(([model, list]) => usageOf(model, list, allocatedCtx(model) ?? null, now))
    .sort((a, b) => b.request_count - a.request_count || a.model.localeCompare(b.model));
}

function usageOf(model: string, rows: TokenRow[], allocated: number | null, now: number): ContextUsage {
  const prompts = rows.map((r) => r.prompt_tokens).sort((a, b) => a - b);
  const totals = rows.map((r) => r.prompt_tokens + r.completion_tokens).sort((a, b) => a - b);
  const lastDay = rows.filter((r) => r.timestamp >= now - DAY_S).map((r) => r.prompt_tokens + r.completion_tokens);
  const p99Total = percentile(totals, 0.99);
  const recommended = Math.max(MIN_CTX, nextPowerOfTwo(p99Total * HEADROOM));
  return {
    model,
    allocated_ctx: allocated,
    override_ctx: null,
    request_count: rows.length,
    prompt_tokens: {
      avg: Math.round(prompts.reduce((sum, n) => sum + n, 0) / prompts.length),
      p50: percentile(prompts, 0.50),
      p75: percentile(prompts, 0.75),
      p95: percentile(prompts, 0.95),
      p99: percentile(prompts, 0.99),
      max: prompts.at(-1)!,
    },
    total_tokens: { p95: percentile(totals, 0.95), p99: p99Total, max: totals.at(-1)!, max_24h: lastDay.length ? Math.max(...lastDay) : null },
    utilization_pct: allocated ? round1((p99Total / allocated) * 100) : null,
    recommended_ctx: recommended,
    savings_pct: allocated ? round1(Math.max(0, 1 - recommended / allocated) * 100) : null,
  };
}

function nextPowerOfTwo(n: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, n)));
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
