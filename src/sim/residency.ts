// Which models a simulated Ollama node holds in memory. Like Ollama's
// scheduler it loads a model on demand, evicts idle models least recently used
// first when memory runs short, waits while busy models hold the memory it
// needs, unloads an idle model once its keep_alive runs out, and runs at most
// OLLAMA_NUM_PARALLEL requests per loaded model at once.
import { loadedBytes, sizeBytes, type SimModelSpec } from "./models.ts";
import { OllamaError } from "./ollama-http.ts";
import { PromptSlots } from "./prompt-cache.ts";
import type { RequestContext } from "./server.ts";

export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

export interface Resident {
  spec: SimModelSpec;
  bytes: number;
  numCtx: number;
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
  /** OLLAMA_NUM_PARALLEL: requests one loaded model runs at once; more wait their turn. Default: no limit. */
  numParallel?: number;
}

export class Residency {
  private models = new Map<string, Resident>();
  readonly memoryBytes: number;

  constructor(private readonly opts: ResidencyOptions) {
    this.memoryBytes = opts.memoryBytes;
  }

  /** Makes exactly these models resident, already loaded; throws if they do not fit. */
  replace(specs: readonly SimModelSpec[]): void {
    const total = specs.reduce((sum, s) => sum + loadedBytes(s), 0);
    if (total > this.memoryBytes) throw new Error(`loaded models need ${gib(total)} GiB, memory is ${gib(this.memoryBytes)} GiB`);
    this.models.clear();
    for (const spec of specs) this.models.set(spec.name, this.newResident(spec, defaultNumCtx(spec), Promise.resolve()));
  }

  /** Unloads every model `keep` rejects (e.g. one no longer on disk), busy or not. */
  retain(keep: (name: string) => boolean): void {
    for (const name of this.models.keys()) if (!keep(name)) this.models.delete(name);
  }

  // Claims a runner for a request, loading the model first if needed. `onReady` is told when the runner is ready,
  // before the wait for a parallel slot: like Ollama's load_duration, a node's answer counts that wait in nothing.
  async acquire(spec: SimModelSpec, numCtx: number, ctx: LoadContext, onReady?: () => void): Promise<Resident> {
    for (;;) {
      this.expireIdle();
      // Like Ollama, a runner loaded with another context size is reloaded (once it is idle).
      const running = this.models.get(spec.name);
      if (running && running.numCtx !== numCtx) {
        if (running.inFlight > 0) {
          await ctx.sleep(10);
          continue;
        }
        this.models.delete(spec.name);
      }
      const r = this.models.get(spec.name) ?? this.reserve(spec, numCtx, ctx);
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

  /** Saves the resident set; the returned function puts it back. */
  checkpoint(): () => void {
    const saved = new Map(this.models);
    return () => {
      this.models = saved;
    };
  }

  // Starts loading the model if memory allows, evicting idle models least
  // recently used first; undefined while busy models hold the memory needed.
  private reserve(spec: SimModelSpec, numCtx: number, ctx: LoadContext): Resident | undefined {
    const bytes = loadedBytes(spec);
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
    const r = this.newResident(spec, numCtx, Bun.sleep(loadMs(spec, this.opts)));
    this.models.set(spec.name, r);
    return r;
  }

  private newResident(spec: SimModelSpec, numCtx: number, ready: Promise<unknown>): Resident {
    const now = Date.now();
    const slots = new PromptSlots(this.opts.numParallel);
    return { spec, bytes: loadedBytes(spec), numCtx, inFlight: 0, running: 0, waiting: [], lastUsed: now, expiresAt: now + DEFAULT_KEEP_ALIVE_MS, ready, slots };
  }

  // A claimed model runs the request now if a parallel slot is free, else once one is; a request that
  // goes away while it waits gives its claim back.
  private async takeSlot(r: Resident, ctx: LoadContext): Promise<void> {
    if (r.running < (this.opts.numParallel ?? Infinity) && !r.waiting.length) {
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

// Ollama's default context, raised for models that need more to be useful.
export function defaultNumCtx(spec: SimModelSpec): number {
  return spec.family === "gptoss" ? 8192 : Math.min(4096, spec.contextLength);
}

const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
