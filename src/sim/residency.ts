// Which models a simulated Ollama node holds in memory, as Ollama's scheduler does (server/sched.go v0.32.15). A
// request for a loaded runner that needs no reload is served at once (GetRunner); every other one waits in ONE queue,
// first come first served, and holds it until its model is loaded (processPending). When the model does not fit, one
// runner is made to go: the first idle one by keep_alive, then blob path (findRunnerToUnload, ByDurationAndName), else
// the first busy one, which goes as its last request ends unless a request asks it to stay meanwhile; the load then
// looks again. An idle runner goes once its keep_alive runs out; a runner runs at most OLLAMA_NUM_PARALLEL requests at
// once; a model loads with the context the request asks for or, asking none, its automatic one, reloading a runner
// only when that differs (needsReload).
import { effectiveContext, gpuMemoryGiB } from "../fleet/ollama-releases.ts";
import { blobPath, loadedBytes, sizeBytes, type SimModelSpec } from "./models.ts";
import { OllamaError } from "./ollama-http.ts";
import { PromptSlots } from "./prompt-cache.ts";
import type { RequestContext } from "./server.ts";

/** OLLAMA_KEEP_ALIVE's default: how long a runner stays idle when no request asked otherwise. */
const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

export interface Resident {
  spec: SimModelSpec;
  bytes: number;
  /** The context each request runs in (what /api/ps says), already cut to the model's trained context. */
  numCtx: number;
  /** Loaded with the automatic context (no num_ctx, no OLLAMA_CONTEXT_LENGTH): another such request never reloads it. */
  auto: boolean;
  /** Requests using the model right now, running or waiting their turn (the runner's refCount). */
  inFlight: number;
  /** Requests generating right now (at most numParallel). */
  running: number;
  /** Requests waiting for one of the model's parallel slots, first come first served. */
  waiting: (() => void)[];
  /** Still loading: requests for it wait in the queue, and it is no runner to evict yet. */
  loading: boolean;
  /** The runner's sessionDuration: how long it stays once idle, as the last request that sent keep_alive asked (0 goes at once). */
  keepAliveMs: number;
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
  /** OLLAMA_MAX_LOADED_MODELS: runners at once; a load past it unloads one first (server/sched.go v0.32.15 processPending). */
  maxLoadedModels: number;
  /** The context a request that asks none gets: OLLAMA_CONTEXT_LENGTH, else the release's default for the machine. */
  defaultContext: number;
  /** OLLAMA_CONTEXT_LENGTH is set: the default is the operator's, not automatic (never lowered to fit, always compared). */
  contextFromEnv: boolean;
}

/** A request's num_ctx; null when it sends none. */
export type AskedContext = number | null;

export class Residency {
  private models = new Map<string, Resident>();
  /** Settles when the last request in the pending queue is done with it: the next one waits for it. */
  private queueTail: Promise<void> = Promise.resolve();
  /** Told of every unload (true: a load waiting for memory looks again, processPending's unloadedCh) and of a runner gone idle. */
  private watchers = new Set<(unloaded: boolean) => void>();
  readonly memoryBytes: number;

  constructor(private readonly opts: ResidencyOptions) {
    this.memoryBytes = opts.memoryBytes;
  }

  /** Makes exactly these models resident, already loaded; throws if they do not fit. */
  replace(specs: readonly SimModelSpec[]): void {
    const runners = specs.map((spec) => ({ spec, ...this.contextFor(spec, null) }));
    const total = runners.reduce((sum, r) => sum + this.bytesAt(r.spec, r.numCtx), 0);
    if (total > this.memoryBytes) throw new Error(`loaded models need ${gib(total)} GiB, memory is ${gib(this.memoryBytes)} GiB`);
    for (const r of [...this.models.values()]) this.unload(r);
    for (const r of runners) this.models.set(r.spec.name, this.newResident(r.spec, r.numCtx, r.auto, undefined, Promise.resolve()));
  }

  /** Unloads every model `keep` rejects (e.g. one no longer on disk), busy or not. */
  retain(keep: (name: string) => boolean): void {
    for (const r of [...this.models.values()]) if (!keep(r.spec.name)) this.unload(r);
  }

  // Claims a runner for a request, loading the model first if needed; `keepAliveMs` is the request's keep_alive,
  // undefined when it sends none. `onReady` is told when the runner is ready, before the wait for a parallel slot:
  // like Ollama's load_duration, a node's answer counts that wait in nothing.
  async acquire(spec: SimModelSpec, asked: AskedContext, keepAliveMs: number | undefined, ctx: LoadContext, onReady?: () => void): Promise<Resident> {
    // A cloud model runs on ollama.com: no runner here, no memory, no load (server/cloud_proxy.go).
    if (spec.remoteHost) return { ...this.newResident(spec, spec.contextLength, false, undefined, Promise.resolve()), bytes: 0, inFlight: 1, running: 1 };
    const wanted = this.contextFor(spec, asked);
    this.expireIdle();
    // server/sched.go v0.32.15 GetRunner: a loaded runner that needs no reload serves at once, whatever waits in the queue.
    const loaded = this.models.get(spec.name);
    const r = loaded && !loaded.loading && !this.needsReload(loaded, wanted) ? this.claim(loaded, keepAliveMs) : await this.queued(ctx.signal, () => this.schedule(spec, wanted, keepAliveMs, ctx));
    await r.ready;
    onReady?.();
    await this.takeSlot(r, ctx);
    return r;
  }

  /** Ends a request's claim; once the runner is idle it stays for its keep_alive (0 unloads it at once). */
  release(r: Resident): void {
    r.running--;
    const next = r.waiting.shift();
    if (next) {
      r.running++; // handed over here, so a newcomer cannot slip in before the waiter resumes
      next();
    }
    this.finished(r);
  }

  unloadIfIdle(name: string): void {
    const r = this.models.get(name);
    if (r?.inFlight === 0) this.unload(r);
  }

  /** The resident models, once those past their keep_alive are gone. */
  current(): Resident[] {
    this.expireIdle();
    return [...this.models.values()];
  }

  /** The residency part of GET /_sim; `loaded` is listed least recently used first (not the order Ollama evicts in). */
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

  // server/sched.go v0.32.15 processPending: one request at a time, in the order they came; one that goes away while
  // it waits leaves its place, and the next waits for the one before it.
  private async queued<T>(signal: AbortSignal, job: () => Promise<T>): Promise<T> {
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const before = this.queueTail;
    this.queueTail = before.then(() => mine);
    try {
      await untilAborted(before, signal);
      return await job();
    } finally {
      done();
    }
  }

  // The queue's turn of one request: use its runner if the one ahead loaded it, else load it once it fits, making one
  // runner go at a time (findRunnerToUnload) and looking again after each unload. Bounded: each pass loads, unloads an
  // idle runner or waits for an unload, and the wait ends with the request.
  private async schedule(spec: SimModelSpec, wanted: { numCtx: number; auto: boolean }, keepAliveMs: number | undefined, ctx: LoadContext): Promise<Resident> {
    const { numCtx, bytes } = this.fit(spec, wanted);
    for (;;) {
      ctx.signal.throwIfAborted();
      this.expireIdle();
      const loaded = this.models.get(spec.name);
      if (loaded && !this.needsReload(loaded, wanted)) return this.claim(loaded, keepAliveMs);
      // Ollama sets its default count after its first load (processPending's maxRunners): the sim counts from the first.
      if (!loaded && this.usedBytes() + bytes <= this.memoryBytes && this.models.size < this.opts.maxLoadedModels) {
        ctx.count("loads");
        const r = this.claim({ ...this.newResident(spec, numCtx, wanted.auto, keepAliveMs, Bun.sleep(loadMs(spec, this.opts))), loading: true }, keepAliveMs);
        this.models.set(spec.name, r);
        await r.ready; // the queue waits for the load (server/sched.go v0.32.15 load: llama.Load)
        r.loading = false;
        return r;
      }
      // A runner with other options goes itself (needsReload); else one by findRunnerToUnload's order.
      const victim = loaded ?? this.runnerToUnload();
      // processPending: sessionDuration 0, so the runner unloads now if idle, else once its last request ends.
      victim.keepAliveMs = 0;
      if (victim.inFlight === 0) this.unload(victim);
      else await this.nextUnload(ctx.signal);
      // An eviction once it has gone with the 0 set here: not when a request since asked it to stay, nor a reload.
      if (victim !== loaded && victim.keepAliveMs === 0 && this.models.get(victim.spec.name) !== victim) ctx.count("evictions");
    }
  }

  // server/sched.go v0.32.15 findRunnerToUnload: by keep_alive, shortest first, then blob path (ByDurationAndName,
  // deterministic since commit 42ecb9f13); the first idle one, else the first even though busy.
  private runnerToUnload(): Resident {
    const order = [...this.models.values()]
      .filter((r) => !r.loading)
      .map((r) => ({ r, path: blobPath(r.spec) }))
      .sort((a, b) => a.r.keepAliveMs - b.r.keepAliveMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) // Infinity − Infinity is NaN: a tie
      .map(({ r }) => r);
    return order.find((r) => r.inFlight === 0) ?? order[0]!;
  }

  // server/sched.go v0.32.15 useLoadedRunner: the request holds the runner, and its keep_alive (if it sends one) is the
  // runner's from now on, a runner chosen to go included, which then stays.
  private claim(r: Resident, keepAliveMs: number | undefined): Resident {
    r.inFlight++;
    r.lastUsed = Date.now();
    if (keepAliveMs !== undefined) r.keepAliveMs = keepAliveMs;
    return r;
  }

  // server/sched.go v0.32.15 processCompleted: a runner whose last request ended unloads at once with keep_alive 0,
  // else stays for its keep_alive.
  private finished(r: Resident): void {
    r.inFlight--;
    r.lastUsed = Date.now();
    r.expiresAt = r.lastUsed + r.keepAliveMs;
    if (r.inFlight > 0) return;
    if (r.keepAliveMs <= 0) this.unload(r);
    else this.tell(false);
  }

  private unload(r: Resident): void {
    if (this.models.get(r.spec.name) !== r) return;
    this.models.delete(r.spec.name);
    this.tell(true);
  }

  private tell(unloaded: boolean): void {
    for (const watch of [...this.watchers]) watch(unloaded);
  }

  // Settles at the next unload, an idle runner's keep_alive running out included (its timer is set again whenever a
  // runner goes idle); rejects when the request goes.
  private nextUnload(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        const first = Math.min(...[...this.models.values()].filter((r) => r.inFlight === 0).map((r) => r.expiresAt));
        timer = Number.isFinite(first) ? setTimeout(() => settle(resolve), Math.min(Math.max(1, first - Date.now()), MAX_TIMER_MS)) : undefined;
      };
      const settle = (then: () => void) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.watchers.delete(watch);
        then();
      };
      const watch = (unloaded: boolean) => (unloaded ? settle(resolve) : arm());
      const onAbort = () => settle(() => reject(signal.reason));
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.watchers.add(watch);
      arm();
    });
  }

  // The context the load runs with and the bytes it takes: an automatic context the machine cannot hold steps down
  // (server/sched.go v0.32.15 reduceAutoNumCtxForLoadOOM); a model bigger than the memory even so is refused.
  private fit(spec: SimModelSpec, wanted: { numCtx: number; auto: boolean }): { numCtx: number; bytes: number } {
    let numCtx = wanted.numCtx;
    while (wanted.auto && this.bytesAt(spec, numCtx) > this.memoryBytes && numCtx > 4096) numCtx = numCtx > 32768 ? 32768 : 4096;
    const bytes = this.bytesAt(spec, numCtx);
    if (bytes > this.memoryBytes) {
      throw new OllamaError(500, `model requires more system memory (${gib(bytes)} GiB) than is available (${gib(this.memoryBytes)} GiB)`);
    }
    return { numCtx, bytes };
  }

  // A runner loaded with another context is reloaded; two automatic ones are never compared (server/sched.go v0.32.15 needsReload).
  private needsReload(r: Resident, wanted: { numCtx: number; auto: boolean }): boolean {
    return !(r.auto && wanted.auto) && r.numCtx !== wanted.numCtx;
  }

  /**
   * The context a request gets and whether it is automatic: its num_ctx, else OLLAMA_CONTEXT_LENGTH, else the
   * release's default; at least 4 and at most the trained context (server/sched.go v0.32.15 getRunner, effectiveContext).
   */
  private contextFor(spec: SimModelSpec, asked: AskedContext): { numCtx: number; auto: boolean } {
    const numCtx = Math.max(4, effectiveContext(asked ?? this.opts.defaultContext, spec.contextLength));
    return { numCtx, auto: asked === null && !this.opts.contextFromEnv };
  }

  private bytesAt(spec: SimModelSpec, numCtx: number): number {
    return loadedBytes(spec, numCtx, this.opts.numParallel);
  }

  // A new runner's keep_alive is its first request's, else OLLAMA_KEEP_ALIVE's default (server/sched.go v0.32.15 load).
  private newResident(spec: SimModelSpec, numCtx: number, auto: boolean, keepAliveMs: number | undefined, ready: Promise<unknown>): Resident {
    const now = Date.now();
    const keep = keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
    const slots = new PromptSlots(this.opts.numParallel);
    return { spec, bytes: this.bytesAt(spec, numCtx), numCtx, auto, inFlight: 0, running: 0, waiting: [], loading: false, keepAliveMs: keep, lastUsed: now, expiresAt: now + keep, ready, slots };
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
      this.finished(r);
      throw e;
    }
  }

  private expireIdle(): void {
    const now = Date.now();
    for (const r of [...this.models.values()]) if (r.inFlight === 0 && r.expiresAt <= now) this.unload(r);
  }

  private usedBytes(): number {
    return [...this.models.values()].reduce((sum, r) => sum + r.bytes, 0);
  }
}

// Longest wait setTimeout takes (2^31 − 1 ms); a wait for a keep_alive longer than that just looks again then.
const MAX_TIMER_MS = 2 ** 31 - 1;

// Settles with `p`, or rejects as soon as the request goes.
function untilAborted(p: Promise<unknown>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    void p.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}

/** How long a load of the model takes: the runner's start, then (with a disk rate) its file read. */
export function loadMs(spec: SimModelSpec, opts: Pick<ResidencyOptions, "loadTimeMs" | "diskGbps">): number {
  const readMs = opts.diskGbps ? (sizeBytes(spec) / 1e9 / opts.diskGbps) * 1000 : 0;
  return opts.loadTimeMs + readMs;
}

const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
