// Which models a simulated Ollama node holds in memory. Like Ollama's
// scheduler (server/sched.go, 0.33) it loads a model on demand, evicts idle models least recently used
// first when memory runs short, waits while busy models hold the memory it
// needs, unloads an idle model once its keep_alive runs out, runs at most
// OLLAMA_NUM_PARALLEL requests per loaded model at once, and loads a model with the context the request asks for
// or, asking none, its automatic one, reloading a runner only when that differs (needsReload).
import { effectiveContext, gpuMemoryGiB } from "../fleet/ollama-releases.ts";
import { loadedBytes, sizeBytes, type SimModelSpec } from "./models.ts";
import { OllamaError } from "./ollama-http.ts";
import { PromptSlots } from "./prompt-cache.ts";
import type { RequestContext } from "./server.ts";

export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

export interface Resident {
  spec: SimModelSpec;
  bytes: number;
  /** The context each request runs in (what /api/ps says), already cut to the model's trained context. */
  numCtx: number;
  /** Loaded with the automatic context (no num_ctx, no OLLAMA_CONTEXT_LENGTH): another such request never reloads it. */
  auto: boolean;
  /** Requests using the model right now, running or waiting their turn; a busy model is never evicted. */
  inFlight: number;
  /** Requests generating right now (at most numParallel). */
  running: number;
  /** Requests waiting for one of the model's parallel slots, first come first served. */
  waiting: (() => void)[];
  lastUsed: number;
  expiresAt: number;
  /** Settles when the model has finished loading. */
  ready: Promise<unknown>;
  /** The runner's KV cache, one slot per parallel request; gone with the runner. */
  slots: PromptSlots;
}

/** What loading needs from a request: a sleep and a signal that stop with it, and the node's counters. */
export type LoadContext = Pick<RequestContext, "sleep" | "count" | "signal">;

export interface ResidencyOptions {
  memoryBytes: number;
  /** Time to start a model's runner. */
  loadTimeMs: number;
  /** When set, a load also reads the model's file at this many GB/s, so a big model loads for longer. */
  diskGbps?: number;
  /** OLLAMA_NUM_PARALLEL: requests one loaded model runs at once; more wait their turn. */
  numParallel: number;
  /** The context a request that asks none gets: OLLAMA_CONTEXT_LENGTH, else the release's default for the machine. */
  defaultContext: number;
  /** OLLAMA_CONTEXT_LENGTH is set: the default is the operator's, not automatic (never lowered to fit, always compared). */
  contextFromEnv: boolean;
}

/** A request's num_ctx; null when it sends none. */
export type AskedContext = number | null;

export class Residency {
  private models = new Map<string, Resident>();
  readonly memoryBytes: number;

  constructor(private readonly opts: ResidencyOptions) {
    this.memoryBytes = opts.memoryBytes;
  }

  /** Makes exactly these models resident, already loaded; throws if they do not fit. */
  replace(specs: readonly SimModelSpec[]): void {
    const runners = specs.map((spec) => ({ spec, ...this.contextFor(spec, null) }));
    const total = runners.reduce((sum, r) => sum + this.bytesAt(r.spec, r.numCtx), 0);
    if (total > this.memoryBytes) throw new Error(`loaded models need ${gib(total)} GiB, memory is ${gib(this.memoryBytes)} GiB`);
    this.models.clear();
    for (const r of runners) this.models.set(r.spec.name, this.newResident(r.spec, r.numCtx, r.auto, Promise.resolve()));
  }

  /** Unloads every model `keep` rejects (e.g. one no longer on disk), busy or not. */
  retain(keep: (name: string) => boolean): void {
    for (const name of this.models.keys()) if (!keep(name)) this.models.delete(name);
  }

  // Claims a runner for a request, loading the model first if needed. `onReady` is told when the runner is ready,
  // before the wait for a parallel slot: like Ollama's load_duration, a node's answer counts that wait in nothing.
  async acquire(spec: SimModelSpec, asked: AskedContext, ctx: LoadContext, onReady?: () => void): Promise<Resident> {
    // A cloud model runs on ollama.com: no runner here, no memory, no load (server/cloud_proxy.go).
    if (spec.remoteHost) return { ...this.newResident(spec, spec.contextLength, false, Promise.resolve()), bytes: 0, inFlight: 1, running: 1 };
    const wanted = this.contextFor(spec, asked);
    for (;;) {
      this.expireIdle();
      // A runner loaded with another context is reloaded once it is idle; two automatic ones are never compared.
      const running = this.models.get(spec.name);
      if (running && !(running.auto && wanted.auto) && running.numCtx !== wanted.numCtx) {
        if (running.inFlight > 0) {
          await ctx.sleep(10);
          continue;
        }
        this.models.delete(spec.name);
      }
      const r = this.models.get(spec.name) ?? this.reserve(spec, wanted, ctx);
      if (r) {
        r.inFlight++;
        r.lastUsed = Date.now();
        await r.ready;
        onReady?.();
        await this.takeSlot(r, ctx);
        return r;
      }
      await ctx.sleep(10);
    }
  }

  /** Ends a request's claim; the model then stays for keepAliveMs (0 unloads it once idle). */
  release(r: Resident, keepAliveMs: number): void {
    r.inFlight--;
    r.running--;
    const next = r.waiting.shift();
    if (next) {
      r.running++; // handed over here, so a newcomer cannot slip in before the waiter resumes
      next();
    }
    r.lastUsed = Date.now();
    r.expiresAt = r.lastUsed + keepAliveMs;
    if (keepAliveMs === 0 && r.inFlight === 0 && this.models.get(r.spec.name) === r) this.models.delete(r.spec.name);
  }

  unloadIfIdle(name: string): void {
    if (this.models.get(name)?.inFlight === 0) this.models.delete(name);
  }

  /** The resident models, once those past their keep_alive are gone. */
  current(): Resident[] {
    this.expireIdle();
    return [...this.models.values()];
  }

  /** The residency part of GET /_sim; `loaded` is least recently used first. */
  state() {
    const byAge = this.current().sort((a, b) => a.lastUsed - b.lastUsed);
    return {
      memoryGb: this.memoryBytes / 2 ** 30,
      usedGb: Number(gib(this.usedBytes())),
      loaded: byAge.map((r) => r.spec.name),
      inFlightByModel: Object.fromEntries(byAge.filter((r) => r.inFlight > 0).map((r) => [r.spec.name, r.inFlight])),
    };
  }

  /** What each resident model has on the GPU, by name: Metal's working set fills in load order, the rest runs on the CPU (size_vram < size). */
  vramBytes(): Map<string, number> {
    let left = gpuMemoryGiB(this.memoryBytes / 2 ** 30) * 2 ** 30;
    const vram = new Map<string, number>();
    for (const r of this.current()) {
      const on = Math.max(0, Math.min(r.bytes, left));
      vram.set(r.spec.name, on);
      left -= on;
    }
    return vram;
  }

  /** Saves the resident set; the returned function puts it back. */
  checkpoint(): () => void {
    const saved = new Map(this.models);
    return () => {
      this.models = saved;
    };
  }

  // Starts loading the model if memory allows, evicting idle models least
  // recently used first; undefined while busy models hold the memory needed.
  private reserve(spec: SimModelSpec, wanted: { numCtx: number; auto: boolean }, ctx: LoadContext): Resident | undefined {
    let numCtx = wanted.numCtx;
    // An automatic context the machine cannot hold steps down (server/sched.go reduceAutoNumCtxForLoadOOM).
    while (wanted.auto && this.bytesAt(spec, numCtx) > this.memoryBytes && numCtx > 4096) numCtx = numCtx > 32768 ? 32768 : 4096;
    const bytes = this.bytesAt(spec, numCtx);
    if (bytes > this.memoryBytes) {
      throw new OllamaError(500, `model requires more system memory (${gib(bytes)} GiB) than is available (${gib(this.memoryBytes)} GiB)`);
    }
    while (this.usedBytes() + bytes > this.memoryBytes) {
      const idle = [...this.models.values()].filter((r) => r.inFlight === 0);
      if (idle.length === 0) return undefined;
      const victim = idle.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b));
      this.models.delete(victim.spec.name);
      ctx.count("evictions");
    }
    ctx.count("loads");
    const r = this.newResident(spec, numCtx, wanted.auto, Bun.sleep(loadMs(spec, this.opts)));
    this.models.set(spec.name, r);
    return r;
  }

  /**
   * The context a request gets and whether it is automatic: its num_ctx, else OLLAMA_CONTEXT_LENGTH, else the
   * release's default; at least 4 and at most the trained context (server/sched.go getRunner, effectiveContext).
   */
  private contextFor(spec: SimModelSpec, asked: AskedContext): { numCtx: number; auto: boolean } {
    const numCtx = Math.max(4, effectiveContext(asked ?? this.opts.defaultContext, spec.contextLength));
    return { numCtx, auto: asked === null && !this.opts.contextFromEnv };
  }

  private bytesAt(spec: SimModelSpec, numCtx: number): number {
    return loadedBytes(spec, numCtx, this.opts.numParallel);
  }

  private newResident(spec: SimModelSpec, numCtx: number, auto: boolean, ready: Promise<unknown>): Resident {
    const now = Date.now();
    const slots = new PromptSlots(this.opts.numParallel);
    return { spec, bytes: this.bytesAt(spec, numCtx), numCtx, auto, inFlight: 0, running: 0, waiting: [], lastUsed: now, expiresAt: now + DEFAULT_KEEP_ALIVE_MS, ready, slots };
  }

  // A claimed model runs the request now if a parallel slot is free, else once one is; a request that
  // goes away while it waits gives its claim back.
  private async takeSlot(r: Resident, ctx: LoadContext): Promise<void> {
    if (r.running < this.opts.numParallel && !r.waiting.length) {
      r.running++;
      return;
    }
    try {
      await new Promise<void>((resolve, reject) => {
        if (ctx.signal.aborted) return reject(ctx.signal.reason);
        const turn = () => {
          ctx.signal.removeEventListener("abort", onAbort);
          resolve();
        };
        const onAbort = () => {
          r.waiting.splice(r.waiting.indexOf(turn), 1);
          reject(ctx.signal.reason);
        };
        ctx.signal.addEventListener("abort", onAbort, { once: true });
        r.waiting.push(turn);
      });
    } catch (e) {
      r.inFlight--;
      throw e;
    }
  }

  private expireIdle(): void {
    const now = Date.now();
    for (const [name, r] of this.models) if (r.inFlight === 0 && r.expiresAt <= now) this.models.delete(name);
  }

  private usedBytes(): number {
    return [...this.models.values()].reduce((sum, r) => sum + r.bytes, 0);
  }
}

/** How long a load of the model takes: the runner's start, then (with a disk rate) its file read. */
export function loadMs(spec: SimModelSpec, opts: Pick<ResidencyOptions, "loadTimeMs" | "diskGbps">): number {
  const readMs = opts.diskGbps ? (sizeBytes(spec) / 1e9 / opts.diskGbps) * 1000 : 0;
  return opts.loadTimeMs + readMs;
}

const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
