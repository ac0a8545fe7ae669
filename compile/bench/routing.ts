// Routing quality: the same seeded workloads through herd once per
// routing.strategy, on two fleets (nodes with agents, and agentless ones), each
// run on a fresh fleet and a fresh router, so no run inherits another's loaded
// models, KV caches or queue statistics.
import type { HerdConfig } from "../../src/config/types.ts";
import { parseConfig } from "../../src/config/load.ts";
import { NEWEST_OLLAMA } from "../../src/fleet/ollama-releases.ts";
import { bestMs, verdict, workOf } from "./bound.ts";
import { type BenchFleet, FLEETS, SESSION_FLEET, simOptions, startFleet } from "./fleet.ts";
import { startHerd } from "./herd-process.ts";
import { type Outcome, replay } from "./replay.ts";
import { percentile, pct, secs, sorted } from "./stats.ts";
import { AGENT_MODEL, AGENT_REPLY_TOKENS, COMPETING_SESSIONS, competingSessions, DURATION_MS, type Job, RARE_MODEL, SEEDS, workload } from "./workload.ts";

/** Each routing setup compared: every strategy, and finish-time without session affinity (what affinity gains agents). */
export const SETUPS = [
  { name: "finish-time", routing: { strategy: "finish-time" } },
  { name: "finish-time, no affinity", routing: { strategy: "finish-time", sessionAffinity: false } },
  { name: "score", routing: { strategy: "score" } },
  { name: "round-robin", routing: { strategy: "round-robin" } },
  { name: "least-connections", routing: { strategy: "least-connections" } },
] as const satisfies readonly { name: string; routing: HerdConfig["routing"] }[];
export type Setup = (typeof SETUPS)[number];
/** The competing sessions are run with and without affinity: what affinity gains agents where each turn has a choice. */
const SESSION_SETUPS = SETUPS.filter((s) => s.routing.strategy === "finish-time");

/** HERD_BENCH_SEEDS=5,6: only those seeds (a quicker look); all of them by default. */
const seeds = (): number[] => process.env.HERD_BENCH_SEEDS?.split(",").map(Number) ?? SEEDS;

export interface StrategyRun {
  strategy: Setup["name"];
  fleet: BenchFleet;
  seed: number;
  outcomes: Outcome[];
  /** Per node, from the sims' counters: models loaded (cold starts), evicted, and prompt tokens the KV cache saved. */
  loads: Record<string, number>;
  evictions: Record<string, number>;
  cachedPromptTokens: Record<string, number>;
}

// One seed at a time; within it every fleet and strategy side by side, each against its own fleet and router: the
// replay is light (simulated nodes mostly wait out their token schedules), and one after another they would take many minutes.
export async function compareStrategies(bin: string): Promise<StrategyRun[]> {
  const runs: StrategyRun[] = [];
  for (const seed of seeds()) {
    const [jobs, sessions] = [workload(seed), competingSessions(seed)];
    const mixed = FLEETS.flatMap((fleet) => SETUPS.map((setup) => runStrategy(bin, fleet, setup, seed, jobs)));
    runs.push(...(await Promise.all([...mixed, ...SESSION_SETUPS.map((setup) => runStrategy(bin, SESSION_FLEET, setup, seed, sessions))])));
  }
  return runs;
}

export async function runStrategy(bin: string, bench: BenchFleet, setup: Setup, seed: number, jobs: Job[]): Promise<StrategyRun> {
  const strategy = setup.name;
  const fleet = await startFleet(bench);
  // VRAM fallback off: the comparison is about where a model runs, not which model answers.
  const config: HerdConfig = { nodes: fleet.nodes, routing: setup.routing, features: { vramFallback: false } };
  const herd = await startHerd(bin, config).catch(async (e) => {
    await fleet.stop();
    throw e;
  });
  try {
    await fleet.report(herd.url, parseConfig(config));
    await seesFleet(herd.url, bench);
    const began = performance.now();
    const outcomes = await replay(herd.url, jobs);
    const kept = process.env.HERD_BENCH_KEEP_DATA === "1" ? ` (data dir ${herd.dataDir})` : "";
    process.stderr.write(`routing: ${bench.name} ${strategy} seed ${seed}: ${outcomes.length} requests in ${Math.round((performance.now() - began) / 1000)} s${kept}\n`);
    const counter = (name: string) => Object.fromEntries(fleet.sims.map((s) => [s.id, s.state().counters[name] ?? 0]));
    return { strategy, fleet: bench, seed, outcomes, loads: counter("loads"), evictions: counter("evictions"), cachedPromptTokens: counter("cachedPromptTokens") };
  } finally {
    await herd.stop();
    await fleet.stop();
  }
}

// Every node is online with what it has loaded (by heartbeat, or herd's own polling of an agentless node).
async function seesFleet(url: string, bench: BenchFleet): Promise<void> {
  const loaded = bench.macs.reduce((n, m) => n + m.loaded.length, 0);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { fleet } = (await (await fetch(`${url}/fleet/status`)).json()) as { fleet: { nodes_online: number; models_loaded: number } };
    if (fleet.nodes_online === bench.macs.length && fleet.models_loaded >= loaded) return;
    await Bun.sleep(50);
  }
  throw new Error(`herd did not see the whole ${bench.name} fleet within 15 s`);
}

export function routingMarkdown(runs: StrategyRun[]): string {
  const jobs = workload(seeds()[0]!);
  const kinds = [...new Set(jobs.map((j) => j.kind))];
  const fleets = FLEETS.map((f) => fleetMarkdown(f, runs.filter((r) => r.fleet === f), kinds)).join("\n\n");
  const mixes = seeds().map((seed) => {
    const js = workload(seed);
    const turns = js.reduce((n, j) => n + 1 + (j.session?.next.length ?? 0), 0);
    return `seed ${seed}: ${turns} requests (${kinds.map((k) => `${js.filter((j) => j.kind === k).length} ${k}`).join(", ")})`;
  });
  return `### Routing quality

Seeded open-loop workloads of ${DURATION_MS / 1000} s, Poisson arrivals per stream (${mixes.join("; ")}), replayed through herd once per
\`routing.strategy\` (and once more with finish-time and \`routing.sessionAffinity: false\`) on each of two fleets, every run on a fresh fleet and a fresh router (features.vramFallback off, so every request
gets the model it asked for). All runs of one seed go side by side; the seeds one after another. The streams: chat and bursts of 10–20
chats to a small model, code (a file excerpt to the 32B coder), 7b (generate), embed, switch (someone trying another model for a few
turns), rare (a 12 GB model, ${RARE_MODEL}, no node has loaded at start, asked every 8 s or so), long (a 1,000–2,500 word document),
and agent: a coding agent's session (counted once in the mix, each of its turns in the requests; its model, ${AGENT_MODEL}, resident at start
on the two larger Macs of each fleet, so a turn has two nodes to go to) with the same 600-word
system prompt in every session, its own task, then 3–7 more turns, each sent 0.2–1.5 s after the last answer with that answer and a
tool's output (30–120 words) appended, the whole conversation resent; answers capped at ${AGENT_REPLY_TOKENS} tokens.

A sim generates at 60% of its bandwidth over the model's size, prefills ten times as fast, loads in 1 s plus the model file at its disk
rate, runs as Ollama ${NEWEST_OLLAMA} does by default (one request per model at once, the rest wait; each model at the context the
Mac's memory picks, its KV cache in memory beside the weights), and keeps each parallel slot's last prompt and answer in
its KV cache as Ollama does: a request takes the free slot sharing the longest prefix with its prompt and prefills only the rest.
The replay and the sims share the bench process; each herd runs in its own. Latency (request → last byte) and time to first token
(TTFT, streams; "agent TTFT" over every agent turn) in seconds; cold loads and share of requests per node; "cached" is the prompt
tokens whose prefill the nodes' KV caches saved. "Best possible" (compile/bench/bound.ts) is each request alone on the node that
serves it soonest, no queue, no herd, priced by the sims' own cost model, a prompt's prefix cached wherever an earlier request of its
model left it: with every model resident wherever it fits ("resident"), and with a first load of each model on its first request
where it is not resident at start ("first loads"); no routing's percentile can be below the first, none that loads a model only
when it is asked for below the second.

${fleets}

${sessionsMarkdown(runs.filter((r) => r.fleet === SESSION_FLEET))}`;
}

function fleetMarkdown(bench: BenchFleet, runs: StrategyRun[], kinds: string[]): string {
  const ids = bench.macs.map((m) => m.id);
  const macs = bench.macs.map(
    (m) => `| ${m.id} | ${m.chip} | ${m.memoryGb} GB | ${m.bandwidthGbps} GB/s | ${m.diskGbps} GB/s | ${m.models.map((x) => (m.loaded.includes(x) ? `**${x}**` : x)).join(", ")} |`,
  );
  const p = (values: number[], q: number) => secs(percentile(sorted(values), q));
  const rows = runs.map((r) => {
    const ok = r.outcomes.filter((o) => o.ok);
    const latency = ok.map((o) => o.latencyMs);
    const ttft = ok.filter((o) => o.job.stream).map((o) => o.firstTokenMs);
    const agent = ok.filter((o) => o.job.kind === "agent").map((o) => o.firstTokenMs);
    const share = ids.map((id) => pct(r.outcomes.filter((o) => o.node === id).length, r.outcomes.length)).join(" / ");
    return `| ${r.strategy} | ${r.seed} | ${ok.length}/${r.outcomes.length} | ${p(latency, 0.5)} | ${p(latency, 0.95)} | ${p(latency, 0.99)} | ${p(ttft, 0.5)} | ${p(ttft, 0.95)} | ${p(agent, 0.5)} | ${p(agent, 0.95)} | ${total(r.loads)} (${ids.map((id) => r.loads[id]).join(" / ")}) | ${total(r.evictions)} | ${total(r.cachedPromptTokens)} | ${share} |`;
  });
  const bounds = [...new Set(runs.map((r) => r.seed))].flatMap((seed) => {
    const b = boundOf(bench, workload(seed));
    const row = (name: string, ms: number[]) => `| ${name} | ${seed} | – | ${secs(percentile(ms, 0.5))} | ${secs(percentile(ms, 0.95))} | ${secs(percentile(ms, 0.99))} | – | – | – | – | – | – | – | – |`;
    return [row("best possible, resident", b.resident), row("best possible, first loads", b.withLoads)];
  });
  const perKind = runs.map((r) => {
    const p95 = (kind: string) => p(r.outcomes.filter((o) => o.ok && o.job.kind === kind).map((o) => o.latencyMs), 0.95);
    return `| ${r.strategy} | ${r.seed} | ${kinds.map(p95).join(" | ")} |`;
  });
  const told = bench.name === "agents" ? "each reported by a real node agent (the sim's collector) heartbeating to herd: herd knows memory, chip and bandwidth" : "named in the config by Ollama URL only: herd knows no memory, bandwidth or parallel slots";
  return `#### Fleet "${bench.name}"

Three simulated Macs, ${told}. Loaded at start in bold.

| node | chip | memory | bandwidth | disk | models |
|---|---|---|---|---|---|
${macs.join("\n")}

Cold loads and share per ${ids.join(" / ")}:

| strategy | seed | ok | p50 | p95 | p99 | TTFT p50 | TTFT p95 | agent TTFT p50 | agent TTFT p95 | cold loads | evictions | cached | share |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}
${bounds.join("\n")}

p95 latency by stream, in seconds:

| strategy | seed | ${kinds.join(" | ")} |
|---|---|${kinds.map(() => "---").join("|")}|
${perKind.join("\n")}

${targetsMarkdown(bench, runs)}`;
}

/**
 * The seed's workload on the fleet with no queue (bound.ts), sorted: every model resident wherever it fits, and a first
 * load of each model on its first request where it is not resident at start.
 */
export function boundOf(bench: BenchFleet, jobs: readonly Job[]): { resident: number[]; withLoads: number[] } {
  const nodes = bench.macs.map(simOptions);
  const best = workOf(jobs).flatMap((w) => bestMs(w, nodes) ?? []);
  return { resident: sorted(best.map((b) => b.resident)), withLoads: sorted(best.map((b) => b.withLoad)) };
}

/**
 * The issue's targets per seed: finish-time against the point scorer (p95 ≤ 0.75×, p99 ≤ 0.9×, no more cold loads),
 * and the agent turns' TTFT with affinity against without (−50%).
 */
function targetsMarkdown(bench: BenchFleet, runs: StrategyRun[]): string {
  const latency = (r: StrategyRun) => sorted(r.outcomes.filter((o) => o.ok).map((o) => o.latencyMs));
  const rows = [...new Set(runs.map((r) => r.seed))].flatMap((seed) => {
    const of = (name: StrategyRun["strategy"]) => runs.find((r) => r.seed === seed && r.strategy === name);
    const [ft, score, solo] = [of("finish-time"), of("score"), of("finish-time, no affinity")];
    if (!ft || !score || !solo) return [];
    const [l, s] = [latency(ft), latency(score)];
    const [with_, without] = [agentTtft(ft), agentTtft(solo)];
    const b = boundOf(bench, workload(seed));
    const at = (q: number) => ({ ft: percentile(l, q), score: percentile(s, q), bound: { resident: percentile(b.resident, q), withLoads: percentile(b.withLoads, q) } });
    const [p95, p99] = [at(0.95), at(0.99)];
    const bounds = (x: typeof p95) => `${ratio(x.bound.resident, x.score)} / ${ratio(x.bound.withLoads, x.score)}`;
    return [
      `| ${seed} | ${ratio(p95.ft, p95.score)} | ${bounds(p95)} | ${verdict(p95.ft, p95.score, p95.bound, 0.75)} | ${ratio(p99.ft, p99.score)} | ${bounds(p99)} | ${verdict(p99.ft, p99.score, p99.bound, 0.9)} | ${total(ft.loads)} / ${total(score.loads)} | ${ratio(percentile(with_, 0.5), percentile(without, 0.5))} | ${ratio(mean(with_), mean(without))} | ${stayed(ft)} / ${stayed(solo)} |`,
    ];
  });
  return `Against the targets (finish-time ÷ score: p95 ≤ 0.75×, p99 ≤ 0.9×, cold loads no more; the TTFT of agent sessions' later turns, with ÷ without affinity, ≤ 0.5×), and the best possible ÷ score (the bound's rows above, resident / first loads): a target is unreachable on a seed where even the bound misses it:

| seed | p95 ÷ score | best possible ÷ score, p95 | p95 target | p99 ÷ score | best possible ÷ score, p99 | p99 target | cold loads (finish-time / score) | agent later turns' TTFT p50, with ÷ without affinity | their mean, with ÷ without | later turns on their last turn's node, with / without |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}`;
}

// The later turns of agent sessions: what a KV cache can speed up.
const laterTurns = (r: StrategyRun) => r.outcomes.filter((o) => o.ok && o.job.kind === "agent" && o.turn > 0);
const agentTtft = (r: StrategyRun) => sorted(laterTurns(r).map((o) => o.firstTokenMs));
// Of those, the share served by the node of the session's turn before (where its KV cache may still hold the
// conversation): replay lists a session's turns one after another.
const stayed = (r: StrategyRun) => {
  const later = r.outcomes.flatMap((o, i) => (o.ok && o.job.kind === "agent" && o.turn > 0 ? [o.node === r.outcomes[i - 1]!.node] : []));
  return pct(later.filter(Boolean).length, later.length);
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "–");
const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/** The competing sessions, with and without affinity, per seed; then affinity's target (later turns' TTFT −50%). */
function sessionsMarkdown(runs: StrategyRun[]): string {
  const ids = SESSION_FLEET.macs.map((m) => m.id);
  const m = SESSION_FLEET.macs[0]!;
  const rows = runs.map((r) => {
    const ok = r.outcomes.filter((o) => o.ok);
    const p = (values: number[], q: number) => secs(percentile(sorted(values), q));
    const later = agentTtft(r);
    const share = ids.map((id) => pct(r.outcomes.filter((o) => o.node === id).length, r.outcomes.length)).join(" / ");
    return `| ${r.strategy} | ${r.seed} | ${ok.length}/${r.outcomes.length} | ${p(ok.map((o) => o.latencyMs), 0.5)} | ${p(ok.map((o) => o.latencyMs), 0.95)} | ${secs(percentile(later, 0.5))} | ${secs(percentile(later, 0.95))} | ${secs(mean(later))} | ${stayed(r)} | ${total(r.cachedPromptTokens)} | ${share} |`;
  });
  const targets = [...new Set(runs.map((r) => r.seed))].flatMap((seed) => {
    const [with_, without] = SESSION_SETUPS.map((s) => runs.find((r) => r.seed === seed && r.strategy === s.name));
    if (!with_ || !without) return [];
    const [a, b] = [agentTtft(with_), agentTtft(without)];
    return [`| ${seed} | ${ratio(percentile(a, 0.5), percentile(b, 0.5))} | ${ratio(mean(a), mean(b))} | ${ratio(percentile(a, 0.95), percentile(b, 0.95))} | ${stayed(with_)} / ${stayed(without)} |`];
  });
  return `#### Competing agent sessions

${COMPETING_SESSIONS} coding agents at once on ${AGENT_MODEL}, nothing else (\`competingSessions\` in compile/bench/workload.ts): each session starts
within the first 5 s with the shared 600-word system prompt and a task of its own, then 6–10 more turns, each sent 0.2–1.5 s after the
last answer with that answer and a tool's output of 100–300 words appended, the whole conversation resent (prompts grow past 3,000
tokens); answers capped at ${AGENT_REPLY_TOKENS} tokens. Three alike Macs with agents (${ids.join(", ")}: ${m.chip}, ${m.memoryGb} GB,
${m.bandwidthGbps} GB/s, Ollama's defaults), the model resident on each: every turn has a real choice of node, and the one
holding its prompt is faster only by its cache. Latency and TTFT in seconds; "later turns" are every turn but a session's first.

| strategy | seed | ok | p50 | p95 | later turns' TTFT p50 | p95 | mean | on their last turn's node | cached | share ${ids.join(" / ")} |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

Affinity's target (later turns' TTFT, with ÷ without affinity, ≤ 0.5×):

| seed | TTFT p50, with ÷ without | mean | p95 | on their last turn's node, with / without |
|---|---|---|---|---|
${targets.join("\n")}`;
}
