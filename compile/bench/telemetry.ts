// What OTLP export (telemetry.otlp) costs: the binary with and without it, to a stand-in collector on loopback
// (it takes the posts and counts the spans): time to ready, memory at idle, CPU per request. Off must cost nothing.
import type { HerdConfig } from "../../src/config/types.ts";
import { IDLE_MS, STARTS, measureBinary } from "./binary.ts";
import { cpuSeconds } from "./herd-process.ts";
import { MODEL, TOKENS } from "./matrix.ts";
import { ms } from "./stats.ts";

const WARM_UP = 2000;
const REQUESTS = 5000;
const CLIENTS = 8;

interface Facts {
  readyMs: number;
  rssMiB: number;
  cpuUsPerRequest: number;
}

export interface TelemetryFacts {
  /** The older binary of HERD_BENCH_BEFORE, when given: off must match it. */
  before?: Facts;
  off: Facts;
  on: Facts;
  spans: number;
}

export async function measureTelemetry(bin: string, oneNode: HerdConfig, beforeBin?: string): Promise<TelemetryFacts> {
  let spans = 0;
  const collector = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.text();
      if (new URL(req.url).pathname === "/v1/traces") spans += body.split('"spanId"').length - 1;
      return Response.json({});
    },
  });
  try {
    const exporting = { ...oneNode, telemetry: { otlp: { endpoint: `http://127.0.0.1:${collector.port}`, intervalMs: 1000 } } };
    const before = beforeBin ? await measure(beforeBin, oneNode) : undefined;
    const off = await measure(bin, oneNode);
    const on = await measure(bin, exporting);
    return { before, off, on, spans };
  } finally {
    await collector.stop(true);
  }
}

async function measure(bin: string, config: HerdConfig): Promise<Facts> {
  let cpuUsPerRequest = 0;
  const { readyMs, rssMiB } = await measureBinary(bin, config, async (herd) => {
    while (!(await fetch(`${herd.url}/api/tags`).then(async (r) => ((await r.json()) as { models: unknown[] }).models.length > 0))) await Bun.sleep(50);
    await load(herd.url, WARM_UP);
    const before = cpuSeconds(herd.pid);
    await load(herd.url, REQUESTS);
    cpuUsPerRequest = ((cpuSeconds(herd.pid) - before) / REQUESTS) * 1e6;
  });
  return { readyMs, rssMiB, cpuUsPerRequest };
}

/** `n` whole /api/generate answers, over CLIENTS clients at once. */
async function load(url: string, n: number): Promise<void> {
  let left = n;
  const body = JSON.stringify({ model: MODEL, prompt: "x", stream: false, options: { num_predict: TOKENS } });
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (left-- > 0) await (await fetch(`${url}/api/generate`, { method: "POST", headers: { "content-type": "application/json" }, body })).arrayBuffer();
    }),
  );
}

export function telemetryMarkdown(f: TelemetryFacts): string {
  const row = (label: string, x: Facts) => `| ${label} | ${ms(x.readyMs)} ms | ${x.rssMiB.toFixed(1)} MiB | ${x.cpuUsPerRequest.toFixed(0)} µs |`;
  return `### OTLP export (telemetry.otlp)

The binary without telemetry.otlp and with it (traces and metrics to a stand-in collector on loopback, sent every second): time to
ready (median of ${STARTS} starts), RSS ${IDLE_MS / 1000} s after ready, and CPU per request (user + system, all threads) over
${REQUESTS.toLocaleString("en")} whole \`/api/generate\` answers from ${CLIENTS} clients after ${WARM_UP.toLocaleString("en")} to warm up. With export on, the collector received
${f.spans.toLocaleString("en")} spans.

| telemetry.otlp | time to ready | RSS at idle | CPU per request |
|---|---|---|---|
${f.before ? `${row("the binary before it (HERD_BENCH_BEFORE)", f.before)}\n` : ""}${row("absent (off)", f.off)}
${row("configured (on)", f.on)}`;
}
