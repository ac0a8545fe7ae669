// Load: 1,000 concurrent streaming clients for 60 s through herd (the compiled
// binary) to two simulated nodes, next to the same load straight at a node:
// errors, the latency herd adds, herd's memory before, during and after, and
// the CPU it spends.
import { readFileSync } from "node:fs";
import { type SimNode, startSimOllama } from "../../src/sim/index.ts";
import { cpuSeconds, rssMb, startHerd } from "./herd-process.ts";
import { type LoadResult, type LoadSpec, runLoad } from "./loadgen.ts";
import { MODEL } from "./matrix.ts";
import { ms, percentile, sorted } from "./stats.ts";

const CLIENTS = 1000;
const SECONDS = 60;
/** After the measured run, a second, shorter one: memory after each shows whether it keeps growing. */
const AGAIN_SECONDS = 20;
/** The straight-at-the-node reference needs less time to be steady. */
const DIRECT_SECONDS = 20;
/** Each answer: 32 tokens (the prompt's reply is longer: num_predict cuts it) at 16 tokens/s, two seconds, as a big local model streams. */
const TOKENS = 32;
const TOKENS_PER_SECOND = 16;
const NODES = 2;
/** After the load, before "after": long enough for herd to close connections and collect garbage. */
const SETTLE_MS = 10_000;

interface Side {
  requests: number;
  errors: number;
  errorSamples: string[];
  rps: number;
  ttft: [p50: number, p99: number];
  latency: [p50: number, p99: number];
}

export interface LoadReport {
  direct: Side;
  herd: Side;
  /** `after`: 10 s after the measured run, and 10 s after a second run of AGAIN_SECONDS. */
  rssMb: { idle: number; peak: number; after: number[] };
  /** herd's CPU time over the run's wall time: 100 = one core busy. */
  cpuPct: number;
  openFiles: { soft: number; hard: number };
}

/** The open-file limits of this process, which the load generator and herd inherit. */
function openFileLimits(): { soft: number; hard: number } {
  const line = /Max open files\s+(\S+)\s+(\S+)/.exec(readFileSync("/proc/self/limits", "utf8"))!;
  const n = (s: string) => (s === "unlimited" ? Number.POSITIVE_INFINITY : Number(s));
  return { soft: n(line[1]!), hard: n(line[2]!) };
}

function side(r: LoadResult): Side {
  const latency = sorted(r.latencyMs);
  const ttft = sorted(r.firstByteMs);
  return {
    requests: latency.length,
    errors: r.errors,
    errorSamples: r.errorSamples,
    rps: latency.length / r.seconds,
    ttft: [percentile(ttft, 0.5), percentile(ttft, 0.99)],
    latency: [percentile(latency, 0.5), percentile(latency, 0.99)],
  };
}

export async function measureLoad(bin: string): Promise<LoadReport> {
  // Each process holds a socket per client (herd two: the client's and the node's), plus its own files.
  const openFiles = openFileLimits();
  const needed = 2 * CLIENTS + 256;
  if (openFiles.soft < needed) {
    throw new Error(`the open-file limit (ulimit -n) is ${openFiles.soft}; ${CLIENTS} clients need ${needed}: run \`ulimit -n ${Math.min(openFiles.hard, 4 * CLIENTS)}\` first`);
  }
  const sims: SimNode[] = [];
  for (let i = 0; i < NODES; i++) sims.push(await startSimOllama({ id: `load-${i}`, models: [MODEL], loaded: [MODEL], tokensPerSecond: TOKENS_PER_SECOND }));
  try {
    const config = { nodes: sims.map((s) => ({ id: s.id, ollama: s.url, parallel: CLIENTS })), features: { autoPull: false } };
    // herd itself needs no fetch cap: it calls the nodes' Ollama over its own connections.
    const herd = await startHerd(bin, config);
    try {
      while (((await (await fetch(`${herd.url}/api/tags`)).json()) as { models: unknown[] }).models.length === 0) await Bun.sleep(50);
      const spec = (url: string, seconds: number): LoadSpec => ({
        url,
        client: "fetch",
        path: "/api/generate",
        body: JSON.stringify({ model: MODEL, prompt: "tell me a story", stream: true, options: { num_predict: TOKENS } }),
        clients: CLIENTS,
        warmup: CLIENTS,
        requests: 0,
        maxMs: seconds * 1000,
        untilMaxMs: true,
        endsWith: '"done":true',
      });
      const direct = side(await runLoad(spec(sims[0]!.url, DIRECT_SECONDS)));

      await Bun.sleep(2000);
      const idle = rssMb(herd.pid);
      let peak = idle;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMb(herd.pid))), 1000);
      const [cpu0, t0] = [cpuSeconds(herd.pid), performance.now()];
      const through = side(await runLoad(spec(herd.url, SECONDS)));
      const cpuPct = (100 * (cpuSeconds(herd.pid) - cpu0)) / ((performance.now() - t0) / 1000);
      const after: number[] = [];
      for (const seconds of [0, AGAIN_SECONDS]) {
        if (seconds) await runLoad(spec(herd.url, seconds));
        await Bun.sleep(SETTLE_MS);
        after.push(rssMb(herd.pid));
      }
      clearInterval(sampler);
      return { direct, herd: through, rssMb: { idle, peak, after }, cpuPct, openFiles };
    } finally {
      await herd.stop();
    }
  } finally {
    await Promise.all(sims.map((s) => s.stop()));
  }
}

/** What memory after each run says: a leak grows with every run, buffers kept for reuse do not. */
function growth(after: number[]): string {
  const delta = after.at(-1)! - after[0]!;
  return `${delta >= 0 ? "+" : ""}${delta.toFixed(1)} MiB from the first to the second`;
}

export function loadMarkdown(r: LoadReport): string {
  const row = (name: string, s: Side) =>
    `| ${name} | ${s.requests} | ${s.errors} | ${s.rps.toFixed(0)} | ${(s.rps * TOKENS).toFixed(0)} | ${ms(s.ttft[0])} / ${ms(s.ttft[1])} | ${ms(s.latency[0])} / ${ms(s.latency[1])} |`;
  const added = (i: 0 | 1) => `${ms(r.herd.ttft[i] - r.direct.ttft[i])} / ${ms(r.herd.latency[i] - r.direct.latency[i])}`;
  const samples = [...r.direct.errorSamples, ...r.herd.errorSamples];
  const limit = (n: number) => (Number.isFinite(n) ? String(n) : "unlimited");
  return `### Load: ${CLIENTS.toLocaleString("en")} concurrent streams

${CLIENTS.toLocaleString("en")} clients (compile/bench/loadgen.ts, one Bun process, closed loop: each sends its next request when its
last answer ends), each streaming \`/api/generate\` of ${MODEL}, ${TOKENS} tokens at ${TOKENS_PER_SECOND} tokens/s (two seconds an answer,
as a big local model streams), for ${SECONDS} s through herd (the compiled binary, two simulated nodes declared with ${CLIENTS} parallel slots
each, so herd's queues hold nothing back) and, for reference, for ${DIRECT_SECONDS} s straight at one of the nodes. The nodes run in the bench
process. An error is a failed request, a status other than 200, or an answer without its final \`"done":true\` line. The
load generator is started with \`BUN_CONFIG_MAX_HTTP_REQUESTS\` (Bun's fetch otherwise sends at most 256 requests at once); herd is
not: it calls the nodes over connections of its own.
Open-file limit (\`ulimit -n\`): ${limit(r.openFiles.soft)} (hard ${limit(r.openFiles.hard)}).

| target | answers | errors | answers/s | tokens/s | first token p50 / p99 ms | whole answer p50 / p99 ms |
|---|---|---|---|---|---|---|
${row("straight at a node", r.direct)}
${row("through herd", r.herd)}

Added by herd, p50: ${added(0)} ms (first token / whole answer); p99: ${added(1)} ms.
herd's resident memory: ${r.rssMb.idle.toFixed(1)} MiB before, ${r.rssMb.peak.toFixed(1)} MiB at its peak under load,
${r.rssMb.after.map((mb) => `${mb.toFixed(1)} MiB`).join(" / ")} ${SETTLE_MS / 1000} s after the run and after a second one of ${AGAIN_SECONDS} s (${growth(r.rssMb.after)}).
herd's CPU over the run (warm-up included): ${r.cpuPct.toFixed(0)}% of one core.${
    samples.length ? `\n\nErrors seen: ${samples.map((s) => `\`${s}\``).join("; ")}` : ""
  }`;
}
