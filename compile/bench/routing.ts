// Routing quality: the same seeded workload through herd once per
// routing.strategy, each time on a fresh fleet and a fresh router, so no run
// inherits another's loaded models or queue statistics.
import type { HerdConfig } from "../../src/config/types.ts";
import { parseConfig } from "../../src/config/load.ts";
import { FLEET_NODE_TOKEN, MACS, fleetNodes, startFleet } from "./fleet.ts";
import { startHerd } from "./herd-process.ts";
import { type Outcome, replay } from "./replay.ts";
import { percentile, pct, secs, sorted } from "./stats.ts";
import { DURATION_MS, type Job, SEED, workload } from "./workload.ts";

const STRATEGIES = ["finish-time", "score", "round-robin", "least-connections"] as const;

export interface StrategyRun {
  strategy: (typeof STRATEGIES)[number];
  outcomes: Outcome[];
  /** Per node: models loaded (cold starts) and evicted during the run, from the sims' counters. */
  loads: Record<string, number>;
  evictions: Record<string, number>;
}

// The strategies run side by side, each against its own fleet and router: the replay is light (simulated
// nodes mostly wait out their token schedules), and one after another they would take minutes.
export function compareStrategies(bin: string, jobs = workload()): Promise<StrategyRun[]> {
  return Promise.all(STRATEGIES.map((strategy) => runStrategy(bin, strategy, jobs)));
}

async function runStrategy(bin: string, strategy: StrategyRun["strategy"], jobs: Job[]): Promise<StrategyRun> {
  // VRAM fallback off: the comparison is about where a model runs, not which model answers.
  const config: HerdConfig = { nodes: fleetNodes, auth: { nodeToken: FLEET_NODE_TOKEN }, routing: { strategy }, features: { vramFallback: false } };
  const herd = await startHerd(bin, config);
  const fleet = await startFleet(herd.url, parseConfig(config)).catch(async (e) => {
    await herd.stop();
    throw e;
  });
  try {
    await seesFleet(herd.url);
    const outcomes = await replay(herd.url, jobs);
    const counter = (name: string) => Object.fromEntries(fleet.sims.map((s) => [s.id, s.state().counters[name] ?? 0]));
    return { strategy, outcomes, loads: counter("loads"), evictions: counter("evictions") };
  } finally {
    await fleet.stop();
    await herd.stop();
  }
}

// The agents have reported: every node is online with what it has loaded.
async function seesFleet(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { models } = (await (await fetch(`${url}/api/ps`)).json()) as { models: { fleet_node: string }[] };
    if (new Set(models.map((m) => m.fleet_node)).size === MACS.length) return;
    await Bun.sleep(50);
  }
  throw new Error("herd did not see the whole fleet within 10 s");
}

export function routingMarkdown(runs: StrategyRun[]): string {
  const jobs = runs[0]?.outcomes.map((o) => o.job) ?? [];
  const kinds = [...new Set(jobs.map((j) => j.kind))];
  const mix = kinds.map((k) => `${jobs.filter((j) => j.kind === k).length} ${k}`).join(", ");
  const fleet = MACS.map(
    (m) => `| ${m.id} | ${m.chip} | ${m.memoryGb} GB | ${m.bandwidthGbps} GB/s | ${m.numParallel} | ${m.diskGbps} GB/s | ${m.models.map((x) => (m.loaded.includes(x) ? `**${x}**` : x)).join(", ")} |`,
  );
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  const rows = runs.map((r) => {
    const ok = r.outcomes.filter((o) => o.ok);
    const latency = sorted(ok.map((o) => o.latencyMs));
    const ttft = sorted(ok.filter((o) => o.job.stream).map((o) => o.firstTokenMs));
    const share = MACS.map((m) => pct(r.outcomes.filter((o) => o.node === m.id).length, r.outcomes.length)).join(" / ");
    return `| ${r.strategy} | ${ok.length}/${r.outcomes.length} | ${secs(percentile(latency, 0.5))} | ${secs(percentile(latency, 0.95))} | ${secs(percentile(latency, 0.99))} | ${secs(percentile(ttft, 0.5))} | ${secs(percentile(ttft, 0.95))} | ${sum(r.loads)} (${MACS.map((m) => r.loads[m.id]).join(" / ")}) | ${sum(r.evictions)} | ${share} |`;
  });
  const perKind = runs.map((r) => {
    const p95 = (kind: string) => secs(percentile(sorted(r.outcomes.filter((o) => o.ok && o.job.kind === kind).map((o) => o.latencyMs)), 0.95));
    return `| ${r.strategy} | ${kinds.map(p95).join(" | ")} |`;
  });
  const nodes = MACS.map((m) => m.id).join(" / ");
  return `### Routing quality

${jobs.length} requests in ${DURATION_MS / 1000} s (seed ${SEED}; ${mix}), open loop with Poisson arrivals, replayed through herd once per
\`routing.strategy\`, the four side by side, each on a fresh fleet and a fresh router (features.vramFallback off, so every request
gets the model it asked for).
The fleet is three simulated Macs, each reported by a real node agent (src/node/agent.ts with the sim's collector) heartbeating to herd
every ${parseConfig({}).heartbeat.intervalMs / 1000} s; a sim generates at 60% of its bandwidth over the model's size, loads in 1 s plus the model file at its disk rate,
and runs OLLAMA_NUM_PARALLEL requests per model at once (the rest wait). Loaded at start in bold. The replay and the sims share the bench
process; herd runs in its own.

| node | chip | memory | bandwidth | parallel | disk | models |
|---|---|---|---|---|---|---|
${fleet.join("\n")}

Latency (request → last byte) and time to first token (streams) in seconds; cold loads per ${nodes}; share of requests per ${nodes}:

| strategy | ok | p50 | p95 | p99 | TTFT p50 | TTFT p95 | cold loads | evictions | share |
|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

p95 latency by stream, in seconds:

| strategy | ${kinds.join(" | ")} |
|---|${kinds.map(() => "---").join("|")}|
${perKind.join("\n")}`;
}
