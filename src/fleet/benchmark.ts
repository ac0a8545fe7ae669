// A benchmark started from the dashboard: real requests through herd's own HTTP
// routes (so routing, queues and traces are exactly what clients get) against the
// models the fleet has loaded (and the image models its nodes offer), for
// `duration` seconds, a few at a time per node.
// It measures latency and time-to-first-token percentiles and tokens/s, overall,
// per model and per node, the deepest queue each node saw, and stores the run.
import type { Database } from "bun:sqlite";
import { type AnswerCap, responseJson } from "../core/capped-body.ts";
import { percentile, sorted } from "../percentile.ts";
import { type BenchmarkRun, saveRun } from "../store/benchmarks.ts";
import { reachableNodes } from "./catalog.ts";
import { fleetImageModels } from "./image-models.ts";
import { normalizeModelName } from "./model-name.ts";
import { modelTraits } from "./model-traits.ts";
import type { Queues } from "./queues.ts";
import type { Registry } from "./registry.ts";

export const MODEL_TYPES = ["llm", "vision", "embed", "image"] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

export interface BenchmarkOptions {
  mode: "default" | "smart";
  duration: number;
  model_types: ModelType[];
}

export type BenchmarkStatus = "idle" | "pulling" | "warming_up" | "running" | "complete" | "error" | "cancelled";

export interface BenchmarkProgress {
  status: BenchmarkStatus;
  phase: string;
  elapsed: number;
  duration: number;
  requests_completed: number;
  requests_failed: number;
  tok_per_sec: number;
  models: string[];
  models_pulled: string[];
  pull_progress: Record<string, unknown>;
  error: string | null;
  run_id: string | null;
}

export interface BenchmarkDeps {
  registry: Registry;
  queues: Queues;
  store: Database;
  /** The router's own URL: requests go through the same routes clients use. */
  baseUrl: () => string;
  /** Headers that let herd's own requests past its guard (the router gives its internal credential's). */
  credentials: () => Record<string, string>;
  /**
   * Reads a streamed answer line by line, failing once it is silent for `idleMs`: the runtime gives the backends'
   * reader (backends/lines.ts), as the fleet layer does not import the backends above it.
   */
  readLines: (body: ReadableStream<Uint8Array>, idleMs: number) => AsyncIterable<string>;
  /** How large a whole answer relayed from a node may be (a pull's, not streamed): server.maxNodeAnswerMb. */
  maxAnswer: () => AnswerCap;
}

/** Where the runner's requests go, the headers they carry, and how their streamed answers are read. */
interface Router {
  url: string;
  headers: Record<string, string>;
  readLines: BenchmarkDeps["readLines"];
}

/** Requests kept in flight per node holding a model: enough to see queueing, not enough to swamp a Mac. */
const PER_NODE = 2;
const MAX_WORKERS = 32;
/** Requests still running at the deadline may finish for this long; then they are cut and not counted. */
const GRACE_MS = 60_000;
const SAMPLE_EVERY_MS = 250;
/** After a failure a worker waits this long, so a model that fails fast is not hammered in a tight loop. */
const FAILURE_PAUSE_MS = 200;
const MAX_TOKENS = 128;
const PROMPT = "Explain in a few sentences why the sky is blue.";
// A 1×1 PNG: enough to make a vision model take its image path.
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/** An image job: small, as a benchmark wants many (an image model's time grows with the pixels). */
const IMAGE_JOB = { prompt: "a lighthouse on a cliff at dusk", width: 256, height: 256 };

type RequestType = ModelType;

interface Target {
  model: string;
  type: RequestType;
  /** Online nodes with the model loaded: the concurrency scales with them. */
  nodes: string[];
}

interface Sample {
  model: string;
  type: RequestType;
  node: string | null;
  ok: boolean;
  latencyMs: number;
  ttftMs: number | null;
  promptTokens: number;
  completionTokens: number;
}

interface Peak {
  node_id: string;
  peak_queue_depth: number;
  peak_in_flight: number;
  peak_pending: number;
  peak_cpu_pct: number | null;
  peak_memory_used_pct: number | null;
}

const ACTIVE: BenchmarkStatus[] = ["pulling", "warming_up", "running"];

export class BenchmarkRunner {
  private state: BenchmarkProgress = idle();
  private runningSince: number | null = null;
  private abort: AbortController | null = null;
  private finished: Promise<void> = Promise.resolve();

  constructor(private readonly deps: BenchmarkDeps) {}

  get active(): boolean {
    return ACTIVE.includes(this.state.status);
  }

  /** Starts a run in the background; returns its id, or null when one is already running. */
  start(opts: BenchmarkOptions): string | null {
    if (this.active) return null;
    const runId = `bench-${Math.floor(Date.now() / 1000)}-${crypto.randomUUID().slice(0, 4)}`;
    this.abort = new AbortController();
    this.runningSince = null;
    this.state = { ...idle(), status: "warming_up", phase: "Starting…", duration: opts.duration, run_id: runId };
    this.finished = this.run(runId, opts, this.abort.signal);
    return runId;
  }

  progress(): BenchmarkProgress {
    const elapsed = this.runningSince === null ? this.state.elapsed : (performance.now() - this.runningSince) / 1000;
    return { ...this.state, elapsed: round(elapsed, 1) };
  }

  /** Stops the running benchmark (nothing is stored); false when none is running. */
  async cancel(): Promise<boolean> {
    if (!this.active) return false;
    this.abort?.abort();
    await this.finished;
    return true;
  }

  private update(changes: Partial<BenchmarkProgress>): void {
    this.state = { ...this.state, ...changes };
  }

  private async run(runId: string, opts: BenchmarkOptions, signal: AbortSignal): Promise<void> {
    const started = Date.now() / 1000;
    try {
      const holders = this.loaded();
      const notes = opts.mode === "smart" ? await this.fillMemory(holders, opts.model_types, signal) : [];
      const targets = [...toTargets(holders, opts.model_types), ...(opts.model_types.includes("image") ? this.imageTargets() : [])];
      notes.push(...skippedTypes(targets, opts.model_types));
      const note = notes.length ? ` (${notes.join("; ")})` : "";
      if (!targets.length) throw new Error(`no model of the requested types (${opts.model_types.join(", ")}) is loaded on an online node${note}`);
      const models = targets.map((t) => t.model);
      this.update({ status: "warming_up", phase: `Warming up ${models.length} model(s)${note}...`, models });
      // One request each, unmeasured: a model that was just evicted (or pulled) loads now, not inside the timed window.
      await Promise.all(targets.map((t) => send(this.router(), t, signal)));

      const types = [...new Set(targets.map((t) => t.type))].sort().join(", ");
      this.update({ status: "running", phase: `Running ${opts.duration}s benchmark (${types})${note}...` });
      this.runningSince = performance.now();
      const { samples, peaks, elapsedS } = await this.drive(targets, opts.duration, signal);
      this.runningSince = null;
      if (signal.aborted) throw signal.reason;
      this.update({ elapsed: elapsedS });
      saveRun(this.deps.store, this.record(runId, started, elapsedS, samples, peaks, opts));
      this.update({ status: "complete", phase: `Complete: ${samples.length} requests in ${round(elapsedS, 1)}s${note}` });
    } catch (e) {
      this.runningSince = null;
      if (signal.aborted) this.update({ status: "cancelled", phase: "Cancelled; nothing was stored" });
      else this.update({ status: "error", phase: "Failed", error: (e as Error).message });
    } finally {
      this.abort = null;
    }
  }

  /** model → the online, undrained nodes that have it loaded. */
  private loaded(): Map<string, string[]> {
    const holders = new Map<string, string[]>();
    for (const node of reachableNodes(this.deps.registry)) {
      if (this.deps.registry.isDraining(node)) continue;
      for (const m of node.ollama!.models_loaded) addHolder(holders, m.name, node.id);
    }
    return holders;
  }

  /** The image models the online nodes offer, each on its nodes: they are generated through POST /api/generate-image. */
  private imageTargets(): Target[] {
    return fleetImageModels(this.deps.registry)
      .map((m): Target => ({ model: m.name, type: "image", nodes: m.fleet_nodes }))
      .sort((a, b) => a.model.localeCompare(b.model));
  }

  private router(): Router {
    return { url: this.deps.baseUrl(), headers: this.deps.credentials(), readLines: this.deps.readLines };
  }

  /**
   * Smart mode: pulls what the recommender (GET /dashboard/api/recommendations) would put on
   * each node, through POST /api/pull, and adds the recommended models to `holders` so the
   * warm-up loads them. Returns notes for the phase text.
   */
  private async fillMemory(holders: Map<string, string[]>, types: ModelType[], signal: AbortSignal): Promise<string[]> {
    const base = this.deps.baseUrl();
    const credentials = this.deps.credentials();
    this.update({ status: "pulling", phase: "Smart mode: asking the recommender what to pull..." });
    const res = await fetch(`${base}/dashboard/api/recommendations?refresh=1`, { headers: credentials, signal });
    if (!res.ok) {
      await res.body?.cancel();
      return [`smart mode: no recommendations (HTTP ${res.status}), nothing pulled`];
    }
    const answer = (await res.json()) as { nodes: { node_id: string; recommendations: { model: string; ram_gb: number; already_available: boolean }[] }[] };
    const wanted = new Set(types);
    const picks = answer.nodes
      .flatMap((n) => n.recommendations.map((r) => ({ ...r, node_id: n.node_id })))
      .filter((r) => wanted.has(requestType(r.model, wanted)));
    const toPull = picks.filter((r) => !r.already_available);
    const totalGb = round(toPull.reduce((n, r) => n + r.ram_gb, 0), 1);
    const failed: string[] = [];
    let completedGb = 0;
    for (const [i, r] of toPull.entries()) {
      const pull_progress = { model: r.model, node_id: r.node_id, current: i + 1, total: toPull.length, ram_gb: r.ram_gb, on_disk: false, pct: round((completedGb / Math.max(totalGb, 0.1)) * 100, 1), completed_gb: round(completedGb, 1), total_gb: totalGb };
      this.update({ phase: `Pulling ${r.model} onto ${r.node_id} (${i + 1}/${toPull.length})...`, pull_progress });
      const pulled = await fetch(`${base}/api/pull`, { method: "POST", headers: { "content-type": "application/json", ...credentials }, body: JSON.stringify({ model: r.model, node_id: r.node_id, stream: false }), signal });
      const body = (await responseJson(pulled, this.deps.maxAnswer()).catch(() => ({}))) as { status?: string };
      if (pulled.ok && body.status === "success") this.update({ models_pulled: [...this.state.models_pulled, r.model] });
      else failed.push(r.model);
      completedGb += r.ram_gb;
    }
    this.update({ pull_progress: {} });
    for (const r of picks) if (!failed.includes(r.model)) addHolder(holders, r.model, r.node_id);
    const pulled = this.state.models_pulled.length;
    return [`smart mode: ${pulled} model(s) pulled${failed.length ? `, ${failed.join(", ")} failed to pull` : ""}`];
  }

  /** Keeps PER_NODE requests per holding node in flight until the deadline, sampling queue depth meanwhile. */
  private async drive(targets: Target[], durationS: number, cancel: AbortSignal) {
    const started = performance.now();
    const deadline = started + durationS * 1000;
    const samples: Sample[] = [];
    const grace = AbortSignal.any([cancel, AbortSignal.timeout(durationS * 1000 + GRACE_MS)]);
    const peaks = new Map<string, Peak>();
    const sampler = setInterval(() => this.samplePeaks(peaks), SAMPLE_EVERY_MS);
    let tokens = 0;
    const worker = async (target: Target) => {
      while (performance.now() < deadline && !grace.aborted) {
        const sample = await send(this.router(), target, grace).catch(() => null);
        if (!sample) return; // cut by cancel or the grace period: not a result
        samples.push(sample);
        tokens += sample.completionTokens;
        const seconds = (performance.now() - started) / 1000;
        this.update({
          requests_completed: this.state.requests_completed + (sample.ok ? 1 : 0),
          requests_failed: this.state.requests_failed + (sample.ok ? 0 : 1),
          tok_per_sec: round(tokens / Math.max(seconds, 0.001), 1),
        });
        if (!sample.ok) await Bun.sleep(FAILURE_PAUSE_MS);
      }
    };
    // Past MAX_WORKERS every model keeps at least one worker, the rest shrink in proportion.
    // A node's image service makes one image at a time: more in flight would only queue there.
    const perNode = (t: Target) => (t.type === "image" ? 1 : PER_NODE) * t.nodes.length;
    const scale = Math.min(1, MAX_WORKERS / targets.reduce((n, t) => n + perNode(t), 0));
    const workers = targets.flatMap((t) => Array.from({ length: Math.max(1, Math.floor(perNode(t) * scale)) }, () => t));
    this.samplePeaks(peaks);
    await Promise.all(workers.map(worker));
    clearInterval(sampler);
    return { samples, peaks: [...peaks.values()], elapsedS: (performance.now() - started) / 1000 };
  }

  private samplePeaks(peaks: Map<string, Peak>): void {
    for (const node of this.deps.registry.all()) {
      const load = this.deps.queues.nodeLoad(node.id);
      const memory = node.report.memory;
      const cpu = node.report.cpu?.utilization_pct ?? null;
      const memoryPct = memory && memory.total_gb > 0 ? (memory.used_gb / memory.total_gb) * 100 : null;
      const p = peaks.get(node.id) ?? { node_id: node.id, peak_queue_depth: 0, peak_in_flight: 0, peak_pending: 0, peak_cpu_pct: null, peak_memory_used_pct: null };
      p.peak_queue_depth = Math.max(p.peak_queue_depth, load.inFlight + load.pending);
      p.peak_in_flight = Math.max(p.peak_in_flight, load.inFlight);
      p.peak_pending = Math.max(p.peak_pending, load.pending);
      if (cpu !== null) p.peak_cpu_pct = round(Math.max(p.peak_cpu_pct ?? 0, cpu), 1);
      if (memoryPct !== null) p.peak_memory_used_pct = round(Math.max(p.peak_memory_used_pct ?? 0, memoryPct), 1);
      peaks.set(node.id, p);
    }
  }

  private record(runId: string, timestamp: number, elapsedS: number, samples: Sample[], peaks: Peak[], opts: BenchmarkOptions): BenchmarkRun {
    const total = stats(samples, elapsedS);
    const byKey = (key: (s: Sample) => string | null) => {
      const groups = new Map<string, Sample[]>();
      for (const s of samples) {
        const k = key(s);
        if (k !== null) groups.set(k, [...(groups.get(k) ?? []), s]);
      }
      return [...groups].sort(([a], [b]) => a.localeCompare(b));
    };
    const perModel = byKey((s) => s.model).map(([model, group]) => ({ model, type: group[0]!.type, ...stats(group, elapsedS) }));
    const perNode = byKey((s) => s.node).map(([node_id, group]) => ({ node_id, models: [...new Set(group.map((s) => s.model))].sort(), ...stats(group, elapsedS) }));
    const fleet = this.deps.registry.all().map((n) => ({
      node_id: n.id,
      status: n.status,
      chip: n.report.hardware?.chip ?? null,
      memory_total_gb: n.report.memory?.total_gb ?? null,
      models_loaded: (n.ollama?.models_loaded ?? []).map((m) => m.name),
    }));
    return {
      run_id: runId,
      timestamp,
      duration_s: round(elapsedS, 2),
      total_requests: total.requests,
      total_failures: total.failures,
      total_prompt_tokens: total.prompt_tokens,
      total_completion_tokens: total.completion_tokens,
      requests_per_sec: total.requests_per_sec,
      tokens_per_sec: total.tokens_per_sec,
      latency_p50_ms: total.latency_p50_ms,
      latency_p95_ms: total.latency_p95_ms,
      latency_p99_ms: total.latency_p99_ms,
      ttft_p50_ms: total.ttft_p50_ms,
      ttft_p95_ms: total.ttft_p95_ms,
      ttft_p99_ms: total.ttft_p99_ms,
      fleet_snapshot: JSON.stringify({ mode: opts.mode, model_types: opts.model_types, nodes: fleet }),
      per_model_results: JSON.stringify(perModel),
      per_node_results: JSON.stringify(perNode),
      peak_utilization: JSON.stringify(peaks),
    };
  }
}

function addHolder(holders: Map<string, string[]>, model: string, nodeId: string): void {
  const name = normalizeModelName(model);
  const nodes = holders.get(name) ?? [];
  if (!nodes.includes(nodeId)) holders.set(name, [...nodes, nodeId]);
}

/** How a model is benchmarked. A vision model answers text too: it is an llm unless vision was asked for. */
function requestType(model: string, wanted: Set<ModelType>): RequestType {
  const { category } = modelTraits(model);
  if (category === "embedding") return "embed";
  return category === "vision" && wanted.has("vision") ? "vision" : "llm";
}

function toTargets(holders: Map<string, string[]>, types: ModelType[]): Target[] {
  const wanted = new Set(types);
  return [...holders]
    .map(([model, nodes]) => ({ model, type: requestType(model, wanted), nodes }))
    .filter((t) => wanted.has(t.type))
    .sort((a, b) => a.model.localeCompare(b.model));
}

/** Why a requested type has nothing to benchmark. */
function skippedTypes(targets: Target[], types: ModelType[]): string[] {
  return types.filter((t) => !targets.some((x) => x.type === t)).map((t) => (t === "image" ? "image: no online node offers an image model, skipped" : `${t}: no such model loaded, skipped`));
}

/** One measured request through the router: streamed chat (llm, vision), an embedding or an image. Throws only when `signal` aborts it. */
async function send(router: Router, target: Target, signal: AbortSignal): Promise<Sample> {
  const started = performance.now();
  try {
    return await measure(router, target, signal, started);
  } catch (e) {
    if (signal.aborted) throw e;
    // The router unreachable, a broken line: a failed request, like any other.
    return { model: target.model, type: target.type, node: null, ok: false, latencyMs: performance.now() - started, ttftMs: null, promptTokens: 0, completionTokens: 0 };
  }
}

async function measure(router: Router, target: Target, signal: AbortSignal, started: number): Promise<Sample> {
  const embed = target.type === "embed";
  const image = target.type === "image";
  const message = { role: "user", content: PROMPT, ...(target.type === "vision" ? { images: [PIXEL] } : {}) };
  const body = image
    ? { model: target.model, ...IMAGE_JOB }
    : embed
      ? { model: target.model, input: PROMPT }
      : { model: target.model, messages: [message], stream: true, options: { num_predict: MAX_TOKENS } };
  // Tagged so analytics can tell benchmark traffic apart; no fallback, so the model measured is the model named.
  const res = await fetch(`${router.url}${image ? "/api/generate-image" : embed ? "/api/embed" : "/api/chat"}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-herd-tags": "benchmark", "x-fleet-no-fallback": "true", ...router.headers },
    body: JSON.stringify(body),
    signal,
  });
  const sample: Sample = { model: target.model, type: target.type, node: res.headers.get("x-fleet-node"), ok: false, latencyMs: 0, ttftMs: null, promptTokens: 0, completionTokens: 0 };
  const done = (ok: boolean) => ({ ...sample, ok, latencyMs: performance.now() - started });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    return done(false);
  }
  // An image is whole when its PNG is: its latency is the generation's (X-Generation-Time, plus routing).
  if (image) {
    await res.arrayBuffer();
    return done(true);
  }
  if (embed) {
    const answer = (await res.json()) as { prompt_eval_count?: number; error?: string };
    return { ...done(!answer.error), promptTokens: answer.prompt_eval_count ?? 0 };
  }
  for await (const text of router.readLines(res.body, GRACE_MS)) {
    const line = JSON.parse(text) as { message?: { content?: string }; done?: boolean; error?: string; prompt_eval_count?: number; eval_count?: number };
    if (line.error) return done(false);
    if (sample.ttftMs === null && line.message?.content) sample.ttftMs = performance.now() - started;
    if (line.done) return { ...done(true), promptTokens: line.prompt_eval_count ?? 0, completionTokens: line.eval_count ?? 0 };
  }
  return done(false); // the stream ended without its done line
}

function stats(samples: Sample[], elapsedS: number) {
  const ok = samples.filter((s) => s.ok);
  const latency = sorted(ok.map((s) => s.latencyMs));
  const ttft = sorted(ok.flatMap((s) => (s.ttftMs === null ? [] : [s.ttftMs])));
  const completion = ok.reduce((n, s) => n + s.completionTokens, 0);
  const seconds = Math.max(elapsedS, 0.001);
  return {
    requests: samples.length,
    failures: samples.length - ok.length,
    prompt_tokens: ok.reduce((n, s) => n + s.promptTokens, 0),
    completion_tokens: completion,
    requests_per_sec: round(ok.length / seconds, 2),
    tokens_per_sec: round(completion / seconds, 1),
    latency_p50_ms: percentileMs(latency, 0.50),
    latency_p95_ms: percentileMs(latency, 0.95),
    latency_p99_ms: percentileMs(latency, 0.99),
    ttft_p50_ms: percentileMs(ttft, 0.50),
    ttft_p95_ms: percentileMs(ttft, 0.95),
    ttft_p99_ms: percentileMs(ttft, 0.99),
  };
}

/** A percentile of ascending values, in ms to one decimal; null with no values. */
function percentileMs(values: number[], p: number): number | null {
  return values.length ? round(percentile(values, p), 1) : null;
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function idle(): BenchmarkProgress {
  return {
    status: "idle",
    phase: "",
    elapsed: 0,
    duration: 0,
    requests_completed: 0,
    requests_failed: 0,
    tok_per_sec: 0,
    models: [],
    models_pulled: [],
    pull_progress: {},
    error: null,
    run_id: null,
  };
}
