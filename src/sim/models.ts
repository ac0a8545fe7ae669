// A catalog of realistic model specs and the facts Ollama derives from them:
// canonical names, on-disk size, digests, `details`, context length and
// deterministic embeddings.
import { createHash } from "node:crypto";
import { parametersOf, quantizationOf, weightBytes } from "../fleet/model-size.ts";

export type Capability = "completion" | "tools" | "thinking" | "insert" | "vision" | "embedding";

export interface SimModelSpec {
  /** e.g. "qwen3:8b"; a name without a tag means ":latest". */
  name: string;
  /** GGUF general.architecture, e.g. "llama", "qwen3", "gptoss", "nomic-bert". */
  family: string;
  /** Parameter count. */
  parameters: number;
  /** GGUF file type as Ollama prints it: "Q4_K_M", "Q8_0", "F16", "MXFP4"… */
  quantization: string;
  /** Trained context length (model_info "<family>.context_length"). */
  contextLength: number;
  /** Hidden size; also the length of the vectors /api/embed returns. */
  embeddingLength: number;
  capabilities: Capability[];
  /** Set for an Ollama cloud model: a stub on disk whose inference runs at this host (api/types.go remote_host). */
  remoteHost?: string;
}

/** Where Ollama's cloud models ("gpt-oss:120b-cloud") run. */
export const CLOUD_HOST = "https://ollama.com:443";
/** A cloud model's manifest stub on disk, in bytes: a few hundred, not the weights. */
const CLOUD_STUB_BYTES = 384;

const chat: Capability[] = ["completion", "tools"];
const thinker: Capability[] = ["completion", "tools", "thinking"];
const embedder: Capability[] = ["embedding"];

// Parameter counts, architectures and context lengths as the Ollama library reports them.
export const CATALOG: readonly SimModelSpec[] = [
  { name: "llama3.2:1b", family: "llama", parameters: 1.24e9, quantization: "Q8_0", contextLength: 131072, embeddingLength: 2048, capabilities: chat },
  { name: "llama3.2:3b", family: "llama", parameters: 3.21e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 3072, capabilities: chat },
  { name: "llama3.1:8b", family: "llama", parameters: 8.03e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 4096, capabilities: chat },
  { name: "llama3.3:70b", family: "llama", parameters: 70.6e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 8192, capabilities: chat },
  { name: "qwen3:8b", family: "qwen3", parameters: 8.19e9, quantization: "Q4_K_M", contextLength: 40960, embeddingLength: 4096, capabilities: thinker },
  { name: "qwen3:30b", family: "qwen3moe", parameters: 30.5e9, quantization: "Q4_K_M", contextLength: 262144, embeddingLength: 2048, capabilities: thinker },
  { name: "qwen3:32b", family: "qwen3", parameters: 32.8e9, quantization: "Q4_K_M", contextLength: 40960, embeddingLength: 5120, capabilities: thinker },
  { name: "qwen2.5-coder:7b", family: "qwen2", parameters: 7.62e9, quantization: "Q4_K_M", contextLength: 32768, embeddingLength: 3584, capabilities: ["completion", "tools", "insert"] },
  { name: "qwen2.5-coder:32b", family: "qwen2", parameters: 32.8e9, quantization: "Q4_K_M", contextLength: 32768, embeddingLength: 5120, capabilities: ["completion", "tools", "insert"] },
  { name: "gemma3:4b", family: "gemma3", parameters: 4.3e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 2560, capabilities: ["completion", "vision"] },
  { name: "gemma3:12b", family: "gemma3", parameters: 12.2e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 3840, capabilities: ["completion", "vision"] },
  { name: "mistral-small3.1:24b", family: "mistral3", parameters: 24e9, quantization: "Q4_K_M", contextLength: 131072, embeddingLength: 5120, capabilities: ["completion", "tools", "vision"] },
  { name: "gpt-oss:20b", family: "gptoss", parameters: 20.9e9, quantization: "MXFP4", contextLength: 131072, embeddingLength: 2880, capabilities: thinker },
  { name: "gpt-oss:120b", family: "gptoss", parameters: 116.8e9, quantization: "MXFP4", contextLength: 131072, embeddingLength: 2880, capabilities: thinker },
  { name: "nomic-embed-text:latest", family: "nomic-bert", parameters: 137e6, quantization: "F16", contextLength: 2048, embeddingLength: 768, capabilities: embedder },
  { name: "mxbai-embed-large:latest", family: "bert", parameters: 334e6, quantization: "F16", contextLength: 512, embeddingLength: 1024, capabilities: embedder },
  { name: "all-minilm:latest", family: "bert", parameters: 23e6, quantization: "F16", contextLength: 512, embeddingLength: 384, capabilities: embedder },
];

/** Ollama's rule: the tag is optional and defaults to "latest". */
export function normalizeName(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.lastIndexOf(":") > lower.lastIndexOf("/") ? lower : `${lower}:latest`;
}

// What ":latest" points at in the Ollama library.
const LATEST: Record<string, string> = {
  "llama3.2": "3b", "llama3.1": "8b", "llama3.3": "70b", qwen3: "8b", "qwen2.5-coder": "7b", gemma3: "4b", "gpt-oss": "20b",
};

/** The catalog's spec for a name ("llama3.2" is llama3.2:3b under the name "llama3.2:latest"). */
export function catalogSpec(name: string): SimModelSpec | undefined {
  const canonical = normalizeName(name);
  const [base = "", tag = ""] = splitTag(canonical);
  const target = tag === "latest" && LATEST[base] ? `${base}:${LATEST[base]}` : canonical;
  const known = CATALOG.find((s) => s.name === target);
  return known && { ...known, name: canonical };
}

/** The catalog's spec, or a plausible one guessed from the name ("phi4:14b" → 14B parameters, fleet/model-size.ts's rule). */
export function specFor(name: string): SimModelSpec {
  const known = catalogSpec(name);
  if (known) return known;
  const canonical = normalizeName(name);
  const [base = canonical, tag = ""] = splitTag(canonical);
  const parameters = parametersOf(canonical) ?? 7e9;
  const embedding = base.includes("embed");
  const cloud = /[-:]cloud$/.test(tag);
  return {
    ...(cloud ? { remoteHost: CLOUD_HOST } : {}),
    name: canonical,
    family: base.replace(/^.*\//, "").replace(/[^a-z].*$/, "") || "llama",
    parameters,
    quantization: embedding ? "F16" : quantizationOf(canonical),
    contextLength: embedding ? 2048 : 8192,
    embeddingLength: embedding ? 768 : 4096,
    capabilities: embedding ? embedder : chat,
  };
}

function splitTag(canonical: string): string[] {
  return canonical.split(/:(?=[^:/]*$)/);
}

/** Size of the GGUF blob in bytes (a cloud model's stub: its manifest alone). */
export function sizeBytes(spec: SimModelSpec): number {
  if (spec.remoteHost) return CLOUD_STUB_BYTES;
  return weightBytes(spec.parameters, spec.quantization);
}

/**
 * Generation speed on a machine with this memory bandwidth: every token reads
 * all the weights once, and llama.cpp reaches about 60% of that bound on Apple silicon.
 */
export function decodeTokensPerSecond(spec: SimModelSpec, memoryBandwidthGbps: number): number {
  return (0.6 * memoryBandwidthGbps * 1e9) / sizeBytes(spec);
}

/**
 * KV cache bytes per token of context, keys and values at f16 (Ollama's default OLLAMA_KV_CACHE_TYPE): about
 * 46 KiB × √(billions of parameters), which gives llama3.1:8b its 128 KiB (32 layers × 8 KV heads × 128 × 2 × 2 B).
 */
export function kvBytesPerToken(spec: SimModelSpec): number {
  return 46 * 1024 * Math.sqrt(spec.parameters / 1e9);
}

/**
 * Bytes a loaded model occupies: its weights, their compute graph (~5%), and a KV cache of `numCtx` tokens for each
 * of its parallel slots (llama-server is started with num_ctx × OLLAMA_NUM_PARALLEL: server/sched.go
 * effectiveLlamaServerContext).
 */
export function loadedBytes(spec: SimModelSpec, numCtx = 4096, parallel = 1): number {
  return Math.round(sizeBytes(spec) * 1.05 + kvBytesPerToken(spec) * numCtx * parallel);
}

/** sha256 hex, stable per name: the manifest digest /api/tags and /api/ps report. */
export function digest(name: string, salt = "manifest"): string {
  return createHash("sha256").update(`${salt}:${normalizeName(name)}`).digest("hex");
}

/**
 * Where the model's weights are on disk: /api/show's FROM line, and the runner's modelPath, which orders evictions
 * (server/sched.go v0.32.15 ByDurationAndName).
 */
export function blobPath(spec: SimModelSpec): string {
  return `/Users/sim/.ollama/models/blobs/sha256-${digest(spec.name, "model")}`;
}

/** Ollama's format.HumanNumber: 3.21e9 → "3.2B", 137e6 → "137M". */
function parameterSize(parameters: number): string {
  for (const [unit, scale] of [["B", 1e9], ["M", 1e6], ["K", 1e3]] as const) {
    if (parameters >= scale) {
      const n = parameters / scale;
      return `${Number.isInteger(n) ? n : n.toFixed(1)}${unit}`;
    }
  }
  return String(parameters);
}

/** The `details` object of /api/tags, /api/ps and /api/show. */
export function details(spec: SimModelSpec) {
  return {
    parent_model: "",
    format: "gguf",
    family: spec.family,
    families: [spec.family],
    parameter_size: parameterSize(spec.parameters),
    quantization_level: spec.quantization,
  };
}

/**
 * A deterministic unit vector for (model, text). Like Ollama's /api/embed the
 * result is L2-normalised; the same input always yields the same vector.
 */
export function embedding(spec: SimModelSpec, text: string, dimensions = spec.embeddingLength): number[] {
  const seed = createHash("sha256").update(`${spec.name}\n${text}`).digest();
  const raw = Array.from({ length: dimensions }, (_, i) => {
    // xorshift over a per-dimension seed: cheap, stable, roughly uniform.
    let x = seed.readUInt32LE((i % 8) * 4) ^ Math.imul(i + 1, 0x9e3779b1);
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0xffffffff - 0.5;
  });
  const norm = Math.sqrt(raw.reduce((sum, v) => sum + v * v, 0)) || 1;
  // float32 precision, as Ollama returns []float32
  return raw.map((v) => Number(Math.fround(v / norm).toPrecision(8)));
}
