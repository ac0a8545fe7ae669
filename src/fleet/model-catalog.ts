// The models herd knows how to recommend: real Ollama library tags with what
// they are for, the memory they need to run, and public benchmark figures.
// The figures are approximate (model cards and papers, rounded): good enough to
// rank models within a category, not to settle arguments between them.
import { sameModel, withoutNamespace } from "./model-name.ts";
import { type Category, modelTraits } from "./model-traits.ts";

/**
 * What the catalog recommends a model for: the kinds a name tells (model-traits.ts), with two purposes among
 * general models, "creative" (writing, conversation) and "fast-chat" (small enough to answer at once). Those are
 * a ranking, not a capability, and no name tells them apart, so a stand-in for a model is picked by its kind alone.
 */
export type ModelCategory = Category | "creative" | "fast-chat";

/** Every category, in the order a fleet should cover them when nothing says otherwise. */
export const CATEGORIES: readonly ModelCategory[] = ["general", "coding", "reasoning", "vision", "creative", "fast-chat", "embedding"];

export interface Benchmarks {
  /** MMLU, % (5-shot where published). */
  mmlu?: number;
  /** HumanEval pass@1, %. */
  humaneval?: number;
  /** MT-Bench, 0–10. */
  mt_bench?: number;
  /** MTEB average, % (embedding models). */
  mteb?: number;
}

export interface CatalogModel {
  model: string;
  display_name: string;
  category: ModelCategory;
  /** Memory to run it: the Q4 weights Ollama pulls plus KV cache at its default context. */
  ram_gb: number;
  scores: Benchmarks;
}

const m = (model: string, display_name: string, category: ModelCategory, ram_gb: number, scores: Benchmarks): CatalogModel => ({
  model,
  display_name,
  category,
  ram_gb,
  scores,
});

export const MODEL_CATALOG: readonly CatalogModel[] = [
  // general
  m("phi4-mini:3.8b", "Phi-4 Mini 3.8B", "general", 3.5, { mmlu: 67.3, humaneval: 74.4 }),
  m("llama3.2:3b", "Llama 3.2 3B", "general", 3, { mmlu: 63.4 }),
  m("llama3.1:8b", "Llama 3.1 8B", "general", 6.5, { mmlu: 69.4, humaneval: 72.6, mt_bench: 8.0 }),
  m("qwen2.5:7b", "Qwen 2.5 7B", "general", 6, { mmlu: 74.2, humaneval: 84.8, mt_bench: 8.75 }),
  m("qwen2.5:14b", "Qwen 2.5 14B", "general", 11, { mmlu: 79.7, humaneval: 83.5, mt_bench: 8.9 }),
  m("phi4:14b", "Phi-4 14B", "general", 11, { mmlu: 84.8, humaneval: 82.6 }),
  m("qwen2.5:32b", "Qwen 2.5 32B", "general", 23, { mmlu: 83.3, humaneval: 88.4, mt_bench: 9.2 }),
  m("llama3.3:70b", "Llama 3.3 70B", "general", 48, { mmlu: 86.0, humaneval: 88.4 }),
  m("qwen2.5:72b", "Qwen 2.5 72B", "general", 52, { mmlu: 86.1, humaneval: 86.6, mt_bench: 9.35 }),
  // coding
  m("qwen2.5-coder:1.5b", "Qwen 2.5 Coder 1.5B", "coding", 1.5, { humaneval: 70.7, mmlu: 60.9 }),
  m("qwen2.5-coder:7b", "Qwen 2.5 Coder 7B", "coding", 6, { humaneval: 88.4, mmlu: 68.0 }),
  m("qwen2.5-coder:14b", "Qwen 2.5 Coder 14B", "coding", 11, { humaneval: 89.6, mmlu: 75.0 }),
  m("deepseek-coder-v2:16b", "DeepSeek Coder V2 Lite 16B", "coding", 11, { humaneval: 81.1, mmlu: 60.1 }),
  m("codestral:22b", "Codestral 22B", "coding", 15, { humaneval: 81.1, mmlu: 63.5 }),
  m("devstral:24b", "Devstral 24B", "coding", 16, { humaneval: 84.0, mmlu: 80.0 }),
  m("qwen3-coder:30b", "Qwen3 Coder 30B-A3B", "coding", 22, { humaneval: 91.0, mmlu: 80.0 }),
  m("qwen2.5-coder:32b", "Qwen 2.5 Coder 32B", "coding", 23, { humaneval: 92.7, mmlu: 75.1 }),
  // reasoning
  m("deepseek-r1:1.5b", "DeepSeek R1 Distill 1.5B", "reasoning", 1.5, { mmlu: 52.0 }),
  m("qwen3:4b", "Qwen3 4B", "reasoning", 3.5, { mmlu: 73.0 }),
  m("qwen3:8b", "Qwen3 8B", "reasoning", 7, { mmlu: 76.9 }),
  m("deepseek-r1:14b", "DeepSeek R1 Distill 14B", "reasoning", 11, { mmlu: 79.0 }),
  m("qwen3:14b", "Qwen3 14B", "reasoning", 11, { mmlu: 81.1 }),
  m("gpt-oss:20b", "GPT-OSS 20B", "reasoning", 16, { mmlu: 85.3 }),
  m("qwen3:30b", "Qwen3 30B-A3B", "reasoning", 22, { mmlu: 81.4 }),
  m("qwq:32b", "QwQ 32B", "reasoning", 23, { mmlu: 83.0 }),
  m("qwen3:32b", "Qwen3 32B", "reasoning", 23, { mmlu: 83.6 }),
  m("deepseek-r1:70b", "DeepSeek R1 Distill 70B", "reasoning", 48, { mmlu: 86.0 }),
  m("gpt-oss:120b", "GPT-OSS 120B", "reasoning", 72, { mmlu: 90.0 }),
  m("qwen3:235b", "Qwen3 235B-A22B", "reasoning", 150, { mmlu: 87.8 }),
  // creative writing and conversation: ranked by MT-Bench
  m("gemma2:2b", "Gemma 2 2B", "creative", 2.5, { mmlu: 56.1, mt_bench: 7.0 }),
  m("hermes3:8b", "Hermes 3 8B", "creative", 6, { mmlu: 65.0, mt_bench: 7.8 }),
  m("gemma2:9b", "Gemma 2 9B", "creative", 7, { mmlu: 71.3, mt_bench: 8.4 }),
  m("mistral-nemo:12b", "Mistral Nemo 12B", "creative", 9, { mmlu: 68.0, mt_bench: 8.1 }),
  m("mistral-small:24b", "Mistral Small 3 24B", "creative", 16, { mmlu: 81.0, humaneval: 84.8, mt_bench: 8.35 }),
  m("gemma2:27b", "Gemma 2 27B", "creative", 18, { mmlu: 75.2, humaneval: 51.8, mt_bench: 8.7 }),
  m("command-r:35b", "Command R 35B", "creative", 22, { mmlu: 68.2, mt_bench: 8.2 }),
  // fast chat: small enough to answer at once on any Mac
  m("qwen2.5:0.5b", "Qwen 2.5 0.5B", "fast-chat", 1, { mmlu: 47.5 }),
  m("llama3.2:1b", "Llama 3.2 1B", "fast-chat", 2, { mmlu: 49.3 }),
  m("smollm2:1.7b", "SmolLM2 1.7B", "fast-chat", 2.5, { mmlu: 50.0, mt_bench: 6.1 }),
  m("qwen2.5:3b", "Qwen 2.5 3B", "fast-chat", 3, { mmlu: 65.6 }),
  // vision
  m("moondream:1.8b", "Moondream 2", "vision", 2, { mmlu: 40.0 }),
  m("gemma3:4b", "Gemma 3 4B", "vision", 4.5, { mmlu: 59.6, humaneval: 36.0 }),
  m("qwen2.5vl:7b", "Qwen 2.5 VL 7B", "vision", 8, { mmlu: 70.0 }),
  m("gemma3:12b", "Gemma 3 12B", "vision", 10, { mmlu: 74.5, humaneval: 45.7 }),
  m("llama3.2-vision:11b", "Llama 3.2 Vision 11B", "vision", 10, { mmlu: 73.0 }),
  m("mistral-small3.1:24b", "Mistral Small 3.1 24B", "vision", 17, { mmlu: 80.6, humaneval: 88.4 }),
  m("gemma3:27b", "Gemma 3 27B", "vision", 20, { mmlu: 78.6, humaneval: 48.8 }),
  m("llama3.2-vision:90b", "Llama 3.2 Vision 90B", "vision", 60, { mmlu: 86.0 }),
  // embeddings: ranked by MTEB
  m("all-minilm:latest", "all-MiniLM-L6 v2", "embedding", 0.1, { mteb: 56.3 }),
  m("nomic-embed-text:latest", "Nomic Embed Text v1.5", "embedding", 0.5, { mteb: 62.3 }),
  m("mxbai-embed-large:latest", "mxbai Embed Large", "embedding", 1, { mteb: 64.7 }),
  m("bge-m3:latest", "BGE-M3", "embedding", 1.5, { mteb: 63.0 }),
];

/** The catalog's entry for a model under any spelling of its name. */
export function catalogModel(name: string, catalog: readonly CatalogModel[] = MODEL_CATALOG): CatalogModel | undefined {
  return catalog.find((c) => sameModel(c.model, name));
}

/**
 * One number to rank models of a category by: the benchmark that measures what
 * the category is for (MT-Bench scaled to 100 for creative work), MMLU otherwise.
 */
export function qualityScore(c: CatalogModel): number {
  const s = c.scores;
  const primary = c.category === "coding" ? s.humaneval : c.category === "creative" ? s.mt_bench && s.mt_bench * 10 : c.category === "embedding" ? s.mteb : s.mmlu;
  return Math.round((primary ?? s.mmlu ?? 0) * 10) / 10;
}

/** A model's display name and category: the catalog's, else read from its name ("phi3:14b" → "Phi3 14B", general). */
export function describeModel(name: string): { display_name: string; category: ModelCategory } {
  const known = catalogModel(name);
  if (known) return { display_name: known.display_name, category: known.category };
  const [base = name, tag = "latest"] = withoutNamespace(name).split(":");
  const words = base.split(/[-_]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1));
  return { display_name: [...words, ...(tag === "latest" ? [] : [tag.toUpperCase()])].join(" "), category: modelTraits(name).category };
}
