// What a model will take in a node's memory once loaded: its weights, and a KV cache of the context it gets there for
// each parallel slot (Ollama starts llama-server with num_ctx × OLLAMA_NUM_PARALLEL: server/sched.go). Since 0.15.5 a
// big Mac gives a model 262144 tokens of context by default (cut to its trained context), so the cache can outweigh the
// weights: llama3.1:8b is 4.9 GB on disk and 21 GB loaded at 131072. The cache per token is learned from the fleet's own
// /api/ps (a loaded model's size, less its weights, over its context), else guessed from the model's size. Pure.
import { modelKey } from "./model-name.ts";
import type { NodeView } from "./scorer.ts";

/**
 * The KV cache per token of context, in GB, guessed for a model of `diskGb` (about 4.85 bits a weight, Q4_K_M):
 * f16 keys and values come to about 40 KiB × √(billions of parameters) in the grouped-query models Ollama serves
 * (llama3.1:8b 128 KiB, qwen2.5:32b 256 KiB, llama3.3:70b 320 KiB: 2 × layers × KV heads × head size × 2 bytes).
 */
export function guessedKvGbPerToken(diskGb: number): number {
  const billions = diskGb / 0.6;
  return (40 * 1024 * Math.sqrt(Math.max(0, billions))) / 1e9;
}

/** Ollama's compute graph beside the weights: a few percent of them, not part of the cache. */
const GRAPH_SHARE = 0.05;

/** The cache per token of `model`, from a node that has it loaded with a known context, else the guess. */
export function kvGbPerToken(model: string, diskGb: number, nodes: readonly NodeView[]): number {
  const key = modelKey(model);
  for (const n of nodes) {
    const loaded = n.loadedByKey.get(key);
    const weights = n.availableByKey.get(key)?.sizeGb;
    if (!loaded?.contextLength || !weights) continue;
    const cache = loaded.sizeGb - weights * (1 + GRAPH_SHARE);
    if (cache > 0) return cache / loaded.contextLength;
  }
  return guessedKvGbPerToken(diskGb);
}

/** The model loaded with `contextTokens` of context for each of `slots`, in GB. */
export function loadedSizeGb(diskGb: number, kvPerTokenGb: number, contextTokens: number, slots: number): number {
  return diskGb * (1 + GRAPH_SHARE) + kvPerTokenGb * contextTokens * Math.max(1, slots);
}
