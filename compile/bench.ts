// `npm run bench [section …]`: what a user of herd feels, on this machine.
// Sections (default: all of them, in this order):
//   binary    size of the compiled binary, time to ready, memory at idle and through the fuzz's 10,000 requests
//   overhead  latency, throughput and CPU herd adds in front of one node (HERD_BENCH_BEFORE=<an older herd
//             binary>: measured in the same rounds, so a change is compared with what came before it)
//   client    Bun's fetch, undici's Pool and herd's own HTTP/1.1 client as herd's upstream client
//   routing   seeded mixed workloads (agent sessions among them) through each routing.strategy (and finish-time without
//             session affinity), on two fleets of unlike Macs, beside the best any routing could do (HERD_BENCH_SEEDS=5,6:
//             only those seeds; HERD_BENCH_KEEP_DATA=1: each herd's data dir, with its traces, kept); then finish-time
//             against the point scorer on fleets and workloads drawn from held-out seeds (HERD_BENCH_RANDOM_SEEDS=101,102:
//             those instead; HERD_BENCH_FLEETS=fixed or random: only those fleets)
//   load      1,000 concurrent streaming clients for 60 s through herd: errors, added latency, memory, CPU
//   telemetry time to ready, idle memory and CPU per request without and with OTLP export (telemetry.otlp),
//             and of HERD_BENCH_BEFORE's binary when given (off must cost what it did before)
// Loopback only; every process it starts, it stops. Prints a Markdown section for
// docs/benchmarks-history.md, whose figures then replace those in docs/benchmarks.md.
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { startSimOllama } from "../src/sim/index.ts";
import { binaryMarkdown, measureBinary } from "./bench/binary.ts";
import { clientsMarkdown, compareClients } from "./bench/clients.ts";
import { fuzzMemoryRow, measureFuzzMemory } from "./bench/fuzz-memory.ts";
import { startHerd } from "./bench/herd-process.ts";
import { loadMarkdown, measureLoad } from "./bench/load.ts";
import { MODEL } from "./bench/matrix.ts";

/** What each simulated node holds on disk: the model the load asks for (loaded) and two more, as a Mac would. */
const FLEET_MODELS = [MODEL, "qwen3:8b", "gemma3:4b"];
import { measureOverhead, overheadMarkdown } from "./bench/overhead.ts";
import { compareStrategies, routingMarkdown } from "./bench/routing.ts";
import { compareOnRandomFleets, randomRoutingMarkdown } from "./bench/routing-random.ts";
import { measureTelemetry, telemetryMarkdown } from "./bench/telemetry.ts";
import { HOST_TARGET } from "./build.ts";

// Bun's fetch runs at most 256 requests at once and queues the rest (BUN_CONFIG_MAX_HTTP_REQUESTS, read when the process
// starts). The replays' clients and the node agents' heartbeats share this process: a busy fleet past 256 open requests
// held the heartbeats back until the routers took every agent's node for offline. So the bench runs itself again with room.
const MAX_HTTP_REQUESTS = "8192";
if (process.env.BUN_CONFIG_MAX_HTTP_REQUESTS !== MAX_HTTP_REQUESTS) {
  const again = Bun.spawn([process.execPath, ...process.argv.slice(1)], { env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: MAX_HTTP_REQUESTS }, stdio: ["inherit", "inherit", "inherit"] });
  process.exit(await again.exited);
}

const SECTIONS = ["binary", "overhead", "client", "routing", "load", "telemetry"];
const asked = process.argv.slice(2);
const unknown = asked.filter((s) => !SECTIONS.includes(s));
if (unknown.length) throw new Error(`unknown section(s) ${unknown.join(", ")}; choose from ${SECTIONS.join(", ")}`);
const runs = (section: string) => !asked.length || asked.includes(section);

const began = performance.now();
const bin = await compileQuietly();
const out: string[] = [];
// One node fast enough that whatever latency shows is herd's or the client's, declared with more parallel
// slots than there are clients, so herd's per-model queue (Ollama's parallelism) never holds a request back.
const sim = await startSimOllama({ id: "bench", models: [MODEL], loaded: [MODEL], tokensPerSecond: 1_000_000 });
const oneNode = { nodes: [{ id: "bench", ollama: sim.url, parallel: 256 }] };
try {
  if (runs("binary")) out.push(binaryMarkdown(HOST_TARGET, await measureBinary(bin, oneNode), fuzzMemoryRow(await measureFuzzMemory(bin))));
  if (runs("overhead")) {
    // Beside the one node, a fleet of three (each with three models on disk, the asked one loaded): what routing costs
    // per candidate, as a user with a Studio, a Mini and a laptop pays it.
    const fleet = await Promise.all(["studio", "mini", "laptop"].map((id) => startSimOllama({ id, models: FLEET_MODELS, loaded: [MODEL], tokensPerSecond: 1_000_000 })));
    const threeNodes = { nodes: fleet.map((s) => ({ id: s.id, ollama: s.url, parallel: 256 })) };
    const before = process.env.HERD_BENCH_BEFORE;
    const started = await Promise.all([startHerd(bin, oneNode), startHerd(bin, threeNodes), ...(before ? [startHerd(before, oneNode), startHerd(before, threeNodes)] : [])]);
    const [herd, herd3, old, old3] = started;
    try {
      for (const h of started) while (!(await fetch(`${h.url}/api/tags`).then(async (r) => ((await r.json()) as { models: unknown[] }).models.length > 0))) await Bun.sleep(50);
      out.push(overheadMarkdown(await measureOverhead(sim.url, { herd: herd!, herd3: herd3!, ...(old && old3 ? { before: old, before3: old3 } : {}) })));
    } finally {
      await Promise.all(started.map((h) => h.stop()));
      await Promise.all(fleet.map((s) => s.stop()));
    }
  }
  if (runs("client")) out.push(clientsMarkdown(await compareClients(sim.url)));
  if (runs("telemetry")) out.push(telemetryMarkdown(await measureTelemetry(bin, oneNode, process.env.HERD_BENCH_BEFORE)));
} finally {
  await sim.stop();
}
if (runs("routing")) {
  const fleets = process.env.HERD_BENCH_FLEETS;
  if (fleets !== "random") out.push(routingMarkdown(await compareStrategies(bin)));
  if (fleets !== "fixed") out.push(randomRoutingMarkdown(await compareOnRandomFleets(bin)));
}
if (runs("load")) out.push(loadMarkdown(await measureLoad(bin)));

const cpu = cpus()[0]?.model.trim() ?? "unknown CPU";
console.log(`## ${new Date().toISOString().slice(0, 10)} — herd ${HOST_TARGET}, ${cpus().length} × ${cpu}, ${Math.round(totalmem() / 1024 ** 3)} GiB

Command: \`npm run bench${asked.length ? ` -- ${asked.join(" ")}` : ""}\` (compile/bench.ts), ${Math.round((performance.now() - began) / 1000)} s in all.

${out.join("\n\n")}`);

// The compiler reports its progress on stdout, which is this report's: run it aside and pass its words to stderr.
async function compileQuietly(): Promise<string> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "build.ts"), HOST_TARGET], { stdout: "pipe", stderr: "inherit" });
  const said = await new Response(proc.stdout).text();
  process.stderr.write(said);
  if ((await proc.exited) !== 0) throw new Error(`building herd for ${HOST_TARGET} failed`);
  return /^built (.+)$/m.exec(said)![1]!;
}
