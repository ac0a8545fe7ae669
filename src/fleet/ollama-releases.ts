// What a node's Ollama does by its release, read from ollama/ollama's source: the one place that knows it. herd
// predicts a node from it (its parallel slots, the context it loads a model with, whether it takes image models),
// and the simulated Ollama behaves by it, so when a release changes these, both change here.

/** The newest release herd follows: the simulated Ollama's default. */
export const NEWEST_OLLAMA = "0.33.0";

type Version = readonly [number, number, number];

/** "0.9.7", "v0.33.0-rc2", "0.13.5-dirty" → its numbers; null for anything else (a version herd cannot place). */
export function parseVersion(text: string | null | undefined): Version | null {
  const m = /^v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?/.exec(text ?? "");
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/** The release is `since` or later; null when it cannot be placed. */
function atLeast(text: string | null | undefined, since: string): boolean | null {
  const v = parseVersion(text);
  if (!v) return null;
  const s = parseVersion(since)!;
  for (let i = 0; i < 3; i++) if (v[i] !== s[i]) return v[i]! > s[i]!;
  return true;
}

/**
 * OLLAMA_NUM_PARALLEL when the node leaves it unset: 1 since 0.9.7 (envconfig/config.go, commit 20c3266e9); before, 0
 * meant "4 when memory allows". A release herd cannot place is taken as current: one at a time never overloads it.
 */
export function defaultParallel(version: string | null | undefined): number {
  return atLeast(version, "0.9.7") === false ? 4 : 1;
}

/**
 * OLLAMA_MAX_LOADED_MODELS when the node leaves it unset: 3 per GPU since 0.2.0 (server/sched.go defaultModelsPerGPU,
 * commit 9929751cc; v0.32.15 processPending), and a Mac has one. A fourth model unloads one (findRunnerToUnload), room
 * or not. herd cannot see a node's environment: it takes the default.
 */
export const MAX_LOADED_MODELS = 3;

/**
 * What Ollama counts as a Mac's GPU memory: Metal's recommendedMaxWorkingSetSize (discover/gpu_info_darwin.m), which
 * macOS sets to two thirds of the memory up to 32 GiB and three quarters above (Apple's default iogpu wired limit; a
 * raised `iogpu.wired_limit_mb` is not seen here: declare the node's contextLength then).
 */
export function gpuMemoryGiB(memoryGiB: number): number {
  return memoryGiB <= 32 ? (memoryGiB * 2) / 3 : memoryGiB * 0.75;
}

/**
 * The context Ollama loads a model with when neither the request nor OLLAMA_CONTEXT_LENGTH sets one, before the cap at
 * the model's trained context: since 0.15.5 by the GPU memory (server/routes.go Serve, commit 0334ffa62: 262144 from
 * 47 GiB, 32768 from 23 GiB, else 4096); 4096 before (envconfig, since 0.6.7). `known` false: a release or memory herd
 * cannot place, for which it assumes the smallest tier.
 */
export function defaultContext(version: string | null | undefined, memoryGiB: number | null): { numCtx: number; known: boolean } {
  const byMemory = atLeast(version, "0.15.5");
  if (byMemory === false) return { numCtx: 4096, known: true };
  if (byMemory === null || memoryGiB === null) return { numCtx: 4096, known: false };
  const gpu = gpuMemoryGiB(memoryGiB);
  return { numCtx: AUTOMATIC_CONTEXTS.find((t) => gpu >= t.fromGpuGiB)!.numCtx, known: true };
}

/** The automatic contexts by GPU memory (server/routes.go Serve, commit 0334ffa62), the biggest first. */
const AUTOMATIC_CONTEXTS = [
  { fromGpuGiB: 47, numCtx: 262144 },
  { fromGpuGiB: 23, numCtx: 32768 },
  { fromGpuGiB: 0, numCtx: 4096 },
] as const;

/**
 * What a model loaded with `contextLength` shows of a node whose memory herd does not know: the least automatic context
 * it has and the least memory that gives (GiB). A context past the middle tier comes only from the biggest (cut to the
 * model's trained context) or a client's ask; one of a tier's size exactly, from that tier or a bigger one; any other
 * says nothing. Null when it shows nothing past the smallest tier.
 */
export function automaticContextShown(contextLength: number): { numCtx: number; memoryGiB: number } | null {
  const tier = AUTOMATIC_CONTEXTS.find((t, i) => contextLength === t.numCtx || (i === 0 && contextLength > AUTOMATIC_CONTEXTS[1].numCtx));
  if (!tier || tier.fromGpuGiB === 0) return null;
  // gpuMemoryGiB turned around: two thirds up to 32 GiB, three quarters above.
  const memoryGiB = tier.fromGpuGiB <= 64 / 3 ? tier.fromGpuGiB * 1.5 : Math.max(32, tier.fromGpuGiB / 0.75);
  return { numCtx: tier.numCtx, memoryGiB };
}

/**
 * The context a runner really gets: a num_ctx past the model's trained context is cut to it (server/sched.go
 * effectiveContext). `trained` null: unknown, no cap.
 */
export function effectiveContext(numCtx: number, trained: number | null): number {
  return trained !== null && trained > 0 && numCtx > trained ? trained : numCtx;
}

/** Ollama generates images (its x/ models, over /v1/images/generations) from 0.14.3 (x/imagegen) until 0.32.6 removed it (commit 4713800b0). */
export function servesImages(version: string | null | undefined): boolean {
  return atLeast(version, "0.14.3") === true && atLeast(version, "0.32.6") === false;
}
