// `npm run bench`: what a user of the binary feels. Builds the host binary, then
// measures its size, time to ready, idle memory, and the latency the router adds
// in front of a simulated node. Loopback only; every process it starts, it stops.
// Results go to stdout as a Markdown section for docs/benchmarks.md.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startSimOllama } from "../src/sim/index.ts";
import { HOST_TARGET, compile } from "./build.ts";

const RUNS = 5;
const REQUESTS = 400;
const CONCURRENCY = 8;

const dir = mkdtempSync(join(tmpdir(), "herd-bench-"));
const bin = await compile(HOST_TARGET);
const sim = await startSimOllama({ id: "bench", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 1_000_000 });
writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "bench", ollama: "${sim.url}" }] };\n`);

async function startBinary(): Promise<{ url: string; pid: number; readyMs: number; stop(): Promise<void> }> {
  const started = performance.now();
  const proc = Bun.spawn([bin, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const decoder = new TextDecoder();
  let out = "";
  for await (const chunk of proc.stderr) {
    out += decoder.decode(chunk);
    const m = out.match(/serving on (http:\/\/[\d.]+:\d+)/);
    if (m) {
      const url = m[1]!;
      while (!(await fetch(`${url}/healthz`).then((r) => r.ok).catch(() => false))) await Bun.sleep(5);
      return { url, pid: proc.pid, readyMs: performance.now() - started, stop: async () => void (proc.kill(), await proc.exited) };
    }
  }
  throw new Error(`herd did not start:\n${out}`);
}

function rssMb(pid: number): number {
  const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function latencies(url: string): Promise<{ p50: number; p99: number; rps: number }> {
  const body = JSON.stringify({ model: "llama3.2:3b", prompt: "hi", stream: false, options: { num_predict: 4 } });
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const t = performance.now();
        const res = await fetch(`${url}/api/generate`, { method: "POST", body });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        await res.arrayBuffer();
        times.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length * 0.5)]!, p99: times[Math.floor(times.length * 0.99)]!, rps: times.length / seconds };
}

try {
  const ready: number[] = [];
  let rss = 0;
  for (let i = 0; i < RUNS; i++) {
    const herd = await startBinary();
    ready.push(herd.readyMs);
    if (i === 0) {
      await Bun.sleep(3000);
      rss = rssMb(herd.pid);
    }
    await herd.stop();
  }
  ready.sort((a, b) => a - b);

  const herd = await startBinary();
  while (!(await fetch(`${herd.url}/api/tags`).then(async (r) => ((await r.json()) as { models: unknown[] }).models.length > 0))) await Bun.sleep(50);
  await latencies(sim.url); // warm-up
  const direct = await latencies(sim.url);
  const routed = await latencies(herd.url);
  await herd.stop();

  const f = (n: number) => n.toFixed(1);
  console.log(`## ${new Date().toISOString().slice(0, 10)} — herd ${HOST_TARGET}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 1024 ** 3)} GiB

Command: \`npm run bench\` (compile/bench.ts)

| measure | value |
|---|---|
| binary size (${HOST_TARGET}) | ${f(statSync(bin).size / 1024 ** 2)} MiB |
| time to ready (spawn → /healthz 200), median of ${RUNS} | ${f(ready[Math.floor(RUNS / 2)]!)} ms |
| RSS at idle, 3 s after ready, one agentless node | ${f(rss)} MiB |
| /api/generate (stream:false, 4 tokens) direct to the sim: p50 / p99 / req/s | ${f(direct.p50)} / ${f(direct.p99)} ms / ${f(direct.rps)} |
| the same through herd: p50 / p99 / req/s | ${f(routed.p50)} / ${f(routed.p99)} ms / ${f(routed.rps)} |
| added by herd at p50 | ${f(routed.p50 - direct.p50)} ms (${f((100 * routed.rps) / direct.rps)}% of direct throughput) |

${REQUESTS} requests, ${CONCURRENCY} concurrent, loopback.`);
} finally {
  await sim.stop();
  rmSync(dir, { recursive: true, force: true });
}
