// The health engine: one snapshot of the router's state (nodes, config, pins,
// queues, the last hour's traffic, context usage), every check run over it,
// and the answer cached for 30 s, as the dashboard polls it every 15 s and the
// trace aggregates are the costly part.
import { log } from "../../log.ts";
import type { Database } from "bun:sqlite";
import type { LiveConfig } from "../../config/live.ts";
import type { ExportHealth } from "../../core/export-health.ts";
import type { TraceWriter } from "../../store/traces.ts";
import { trafficByModel } from "../../store/health-stats.ts";
import type { Pins } from "../pins.ts";
import type { Warmer } from "../preloader.ts";
import type { Queues } from "../queues.ts";
import type { Registry } from "../registry.ts";
import { ollamaDown } from "../ollama-down.ts";
import { CHECKS } from "./checks/index.ts";
import { contextUsageReport } from "./context-usage.ts";
import { type CheckResult, type HealthCheck, type HealthInput, SEVERITIES, type Severity, worst } from "./types.ts";

const CACHE_TTL_MS = 30_000;
const HOUR_S = 3600;
/** The window of context usage the context_waste check judges (GET /dashboard/api/context-usage's default). */
const CONTEXT_DAYS = 7;

export interface HealthReport {
  /** Unix seconds. */
  generated_at: number;
  cached: boolean;
  summary: { status: Severity } & Record<Severity, number>;
  checks: (CheckResult & { id: string; name: string })[];
}

/** What the engine reads of the router: handed in by the composition root, or fakes in a test. */
export interface HealthSources {
  live: LiveConfig;
  registry: Registry;
  queues: Queues;
  pins: Pins;
  warmer: Pick<Warmer, "states">;
  store: Database;
  traces: Pick<TraceWriter, "health">;
  exports: Pick<ExportHealth, "signals" | "droppedSpans">;
}

function snapshot(rt: HealthSources, now: number): HealthInput {
  const { registry, queues } = rt;
  return {
    now,
    config: rt.live.config,
    configStatus: rt.live.status(),
    nodes: registry.all().map((n) => ({ ...n, declared: registry.entry(n.id) !== undefined, loadEvents: [...n.loadEvents] })),
    ollamaDown: ollamaDown(registry.all(), (n) => registry.shownOllamaUrl(n)),
    pins: Object.entries(rt.pins.perNode()).flatMap(([node_id, models]) => models.map((model) => ({ node_id, model }))),
    loads: rt.warmer.states(),
    queues: queues.entries().map((q) => ({
      node_id: q.node_id,
      model: q.model,
      pending: q.pending,
      in_flight: q.in_flight,
      concurrency: q.concurrency,
      oldest_running_since: queues.oldestRunningSince(q.node_id, q.model),
    })),
    lastHour: trafficByModel(rt.store, now / 1000 - HOUR_S),
    contextUsage: contextUsageReport(rt.store, registry, CONTEXT_DAYS, now / 1000),
    traceWrites: rt.traces.health(),
    otlpExports: { signals: structuredClone(rt.exports.signals), droppedSpans: rt.exports.droppedSpans },
  };
}

/** Runs every check; the worst problems first, each check once, even when it throws. */
function runChecks(input: HealthInput): HealthReport["checks"] {
  const results = CHECKS.map((check) => ({ id: check.id, name: check.name, ...runOne(check, input) }));
  return results.toSorted((a, b) => SEVERITIES.indexOf(b.severity) - SEVERITIES.indexOf(a.severity));
}

// A bug in one check must not blank the whole page: it shows up as that check's finding instead.
function runOne(check: HealthCheck, input: HealthInput): CheckResult {
  try {
    return check.run(input);
  } catch (e) {
    log.error(`health check ${check.id} failed: ${(e as Error).stack ?? e}`);
    return { severity: "warning", finding: `the check itself failed: ${(e as Error).message}`, recommendation: "report this as a herd bug.", nodes: [], details: {} };
  }
}

export class HealthEngine {
  private last: { report: HealthReport; at: number } | null = null;

  constructor(private readonly rt: HealthSources) {}

  report(refresh = false): HealthReport {
    const now = Date.now();
    if (!refresh && this.last && now - this.last.at < CACHE_TTL_MS) return { ...this.last.report, cached: true };
    const checks = runChecks(snapshot(this.rt, now));
    const count = (s: Severity) => checks.filter((c) => c.severity === s).length;
    const report: HealthReport = {
      generated_at: now / 1000,
      cached: false,
      summary: { status: worst(checks.map((c) => c.severity)), critical: count("critical"), warning: count("warning"), info: count("info"), ok: count("ok") },
      checks,
    };
    this.last = { report, at: now };
    return report;
  }
}
