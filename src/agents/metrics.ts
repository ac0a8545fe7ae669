// GET /metrics in the Prometheus text format: herd's routing (requests by
// outcome, model and node since start; what runs and waits on each queue;
// nodes by status), the OTLP export's failures, and the agent fleet (workers,
// send outcomes, held replies).
import type { LiveConfig } from "../config/live.ts";
import type { Queues } from "../fleet/queues.ts";
import type { Registry } from "../fleet/registry.ts";
import { nodeRuns } from "../fleet/status.ts";
import type { ExportHealth } from "../core/export-health.ts";
import type { TraceWriter } from "../store/traces.ts";
import type { AgentFleet } from "./fleet.ts";
import { VERSION } from "../version.ts";
import { stateOf } from "./sessions.ts";

type Labels = Record<string, string>;
type Sample = [Labels, number];

const escape = (v: string) => v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
const labelText = (labels: Labels) => {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
};

function family(name: string, type: "counter" | "gauge", help: string, samples: Sample[]): string {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([l, v]) => `${name}${labelText(l)} ${v}`)].join("\n");
}

function countBy<T>(items: T[], key: (t: T) => Labels): Sample[] {
  const counts = new Map<string, Sample>();
  for (const item of items) {
    const labels = key(item);
    const id = JSON.stringify(labels);
    const sample = counts.get(id) ?? [labels, 0];
    sample[1]++;
    counts.set(id, sample);
  }
  return [...counts.values()];
}

/** What /metrics counts. */
export interface MetricsSources {
  agents: AgentFleet;
  queues: Queues;
  registry: Registry;
  live: Pick<LiveConfig, "current">;
  traces: Pick<TraceWriter, "outcomes">;
  exports: Pick<ExportHealth, "signals" | "droppedSpans">;
}

export function renderMetrics(rt: MetricsSources): string {
  // Counted as requests are recorded, from zero at each start as Prometheus counters are (rate() takes restarts in
  // its stride): a scrape never queries the store, however many traces it holds.
  const requests = [...rt.traces.outcomes.values()];
  const queues = rt.queues.entries();
  const members = rt.agents.sessions.all();
  const routerHash = rt.live.current.source.hash;
  const runs = rt.registry.all().map((n) => ({ id: n.id, ...nodeRuns(n, routerHash) })).filter((n) => n.agent_version !== null || n.config_hash !== null);
  return [
    family("herd_info", "gauge", "The running herd: its version and config hash.", [[{ version: VERSION, config_hash: routerHash }, 1]]),
    family(
      "herd_node_drift",
      "gauge",
      "Per node with an agent: the herd version and config hash it runs; 1 when either differs from the router's.",
      runs.map((n) => [{ node: n.id, version: n.agent_version ?? "", config_hash: n.config_hash ?? "" }, n.version_drift || n.config_drift ? 1 : 0]),
    ),
    family("herd_requests_total", "counter", "Requests routed, by outcome, model and node.", requests.map((r) => [{ status: r.status, model: r.model, node: r.node }, r.count])),
    family("herd_requests_in_flight", "gauge", "Requests running, by node and model.", queues.map((q) => [{ node: q.node_id, model: q.model }, q.in_flight])),
    family("herd_requests_queued", "gauge", "Requests waiting for a slot, by node and model.", queues.map((q) => [{ node: q.node_id, model: q.model }, q.pending])),
    family("herd_nodes", "gauge", "Nodes by status.", countBy(rt.registry.all(), (n) => ({ status: n.status }))),
    family("herd_otlp_exports_failed_total", "counter", "OTLP exports the collector failed (telemetry.otlp), by signal.", Object.entries(rt.exports.signals).map(([signal, s]) => [{ signal }, s.failed])),
    family("herd_otlp_spans_dropped_total", "counter", "Spans lost: in failed OTLP exports, or dropped while the export queue was full.", [[{}, rt.exports.droppedSpans]]),
    family("herd_agents_workers", "gauge", "Agent workers by profile and state.", countBy(members, (m) => ({ profile: m.profile, state: stateOf(m) }))),
    family("herd_agents_sends_total", "counter", "Sends to workers by outcome.", [...rt.agents.messages.outcomes].map(([outcome, n]) => [{ outcome }, n])),
    family("herd_agents_held_replies", "gauge", "Replies waiting in the workers' inboxes.", [[{}, members.reduce((sum, m) => sum + m.inbox.length, 0)]]),
    family("herd_agents_inbox_refusals_total", "counter", "Replies refused because the worker's inbox was full (agents.inbox).", [[{}, rt.agents.messages.inboxRefusals]]),
  ].join("\n\n") + "\n";
}
