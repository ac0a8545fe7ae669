// The shapes of the health engine: the snapshot every check reads, what a
// check returns, and how a check's problems on several nodes fold into one answer.
import type { ConfigStatus } from "../../config/live.ts";
import type { ExportHealth } from "../../core/export-health.ts";
import type { Config } from "../../config/schema.ts";
import type { ModelTraffic } from "../../store/health-stats.ts";
import type { TraceWrites } from "../../store/traces.ts";
import type { OllamaDown } from "../ollama-down.ts";
import type { LoadState } from "../preloader.ts";
import type { NodeRecord } from "../registry.ts";
import type { ContextUsage } from "./context-usage.ts";

export const SEVERITIES = ["ok", "info", "warning", "critical"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** A node as the checks see it. */
export type NodeInput = NodeRecord & {
  /** In the config's nodes (else an agent that reported on its own). */
  declared: boolean;
};

export interface QueueInput {
  node_id: string;
  model: string;
  pending: number;
  in_flight: number;
  concurrency: number;
  /** When the longest-running request got its slot (ms epoch), or null when none runs. */
  oldest_running_since: number | null;
}

/** Everything the checks read, taken at one moment: checks are pure functions of it. */
export interface HealthInput {
  /** ms epoch. */
  now: number;
  config: Config;
  configStatus: ConfigStatus;
  nodes: NodeInput[];
  /** The nodes whose Ollama does not answer. */
  ollamaDown: OllamaDown[];
  /** Every pin: the config's and the API's, each node's in the order the preloader takes them. */
  pins: { node_id: string; model: string }[];
  /** The loads under way on nodes (the preloader's, a pin's, a replica's), and those whose last try failed. */
  loads: LoadState[];
  queues: QueueInput[];
  /** Per-model traffic of the last hour. */
  lastHour: ModelTraffic[];
  /** Context usage over the last 7 days. */
  contextUsage: ContextUsage[];
  /** How the trace writer's writes to the store have gone since start. */
  traceWrites: TraceWrites;
  /** How the OTLP export's (telemetry.otlp) exports have gone since start. */
  otlpExports: Pick<ExportHealth, "signals" | "droppedSpans">;
}

export interface CheckResult {
  severity: Severity;
  /** One line: what is wrong (or that all is well). */
  finding: string;
  /** What to do; empty when the check is ok. */
  recommendation: string;
  nodes?: string[];
  details?: Record<string, unknown>;
}

export interface HealthCheck {
  id: string;
  name: string;
  run(input: HealthInput): CheckResult;
}

/** One thing a check found, e.g. on one node. */
export interface Problem {
  severity: Exclude<Severity, "ok">;
  finding: string;
  recommendation: string;
  node?: string;
  details?: Record<string, unknown>;
}

export function worst(severities: Severity[]): Severity {
  return severities.reduce<Severity>((a, b) => (SEVERITIES.indexOf(b) > SEVERITIES.indexOf(a) ? b : a), "ok");
}

/** A check's problems as one result, worst first; `okFinding` when there are none. */
export function fold(problems: Problem[], okFinding: string): CheckResult {
  if (!problems.length) return { severity: "ok", finding: okFinding, recommendation: "", nodes: [], details: {} };
  const sorted = problems.toSorted((a, b) => SEVERITIES.indexOf(b.severity) - SEVERITIES.indexOf(a.severity));
  const unique = (list: (string | undefined)[]) => [...new Set(list.filter((s): s is string => Boolean(s)))];
  return {
    severity: sorted[0]!.severity,
    finding: sorted.map((p) => p.finding).join("; "),
    recommendation: unique(sorted.map((p) => p.recommendation)).join(" "),
    nodes: unique(sorted.map((p) => p.node)),
    details: { problems: sorted.map((p) => ({ severity: p.severity, node: p.node ?? null, ...p.details })) },
  };
}

/** "300 ms", "42 s", "12 min", "3 h": durations as an operator reads them. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
}

export function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}
