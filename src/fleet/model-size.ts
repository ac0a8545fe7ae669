// What a model needs when no node lists it: the recommendations catalog's figure, else its weights as its name
// tells them. Ollama's names say both the parameter count and the quantization ("llama3.1:405b",
// "qwen2.5:7b-instruct-q8_0"); a name that states no quantization is the library's default, Q4_K_M. The simulated
// Ollama sizes the models it makes up by the same rule.
import { catalogModel } from "./model-catalog.ts";
import { withoutNamespace } from "./model-name.ts";
import { toGb } from "./node-models.ts";

/** Average bits per weight of each GGUF file type (K-quants keep some tensors at higher precision, MXFP4 models keep attention in BF16). */
export const BITS_PER_WEIGHT: Readonly<Record<string, number>> = {
  Q4_0: 4.55, Q4_K_M: 4.85, Q5_K_M: 5.69, Q6_K: 6.56, Q8_0: 8.5, F16: 16, BF16: 16, MXFP4: 4.7,
};
/** The file type of the Ollama library's default tags. */
export const DEFAULT_QUANTIZATION = "Q4_K_M";

// "405b", "1.5b", "335m", "8x7b" (experts × their size); the first in the name is its total ("235b-a22b").
const PARAMETERS = /(?:^|[^a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])/;

/** The parameter count a name states, or null: the tag's, else the model's own name's ("hf.co/org/Llama-3.1-405B-GGUF"). */
export function parametersOf(name: string): number | null {
  const [base = "", tag = ""] = withoutNamespace(name).toLowerCase().split(/:(?=[^:]*$)/);
  const hit = PARAMETERS.exec(tag) ?? PARAMETERS.exec(base);
  if (!hit) return null;
  return Number(hit[1] ?? 1) * Number(hit[2]) * (hit[3] === "b" ? 1e9 : 1e6);
}

/** The GGUF file type a name's tag states ("q8_0", "fp16", "Q4_K_M"), else the library's default. */
export function quantizationOf(name: string): string {
  const tag = name.slice(name.lastIndexOf(":") + 1).toUpperCase().replace("FP16", "F16");
  return Object.keys(BITS_PER_WEIGHT).find((q) => new RegExp(`(^|[^A-Z0-9])${q}($|[^A-Z0-9])`).test(tag)) ?? DEFAULT_QUANTIZATION;
}

/** Bytes of `parameters` weights of that file type. */
export function weightBytes(parameters: number, quantization: string): number {
  return Math.round((parameters * (BITS_PER_WEIGHT[quantization] ?? BITS_PER_WEIGHT[DEFAULT_QUANTIZATION]!)) / 8);
}

/**
 * What `name` needs to run, in GB, when no node lists it: the catalog's figure (its weights and KV cache), else its
 * weights alone as its name tells them (`estimated`: the least it needs); null when neither says, and for an Ollama
 * cloud model ("gpt-oss:120b-cloud"), which runs at ollama.com and needs no memory here.
 */
export function expectedSizeGb(name: string): { gb: number; estimated: boolean } | null {
  if (CLOUD.test(name)) return null;
  const known = catalogModel(name);
  if (known) return { gb: known.ram_gb, estimated: false };
  const parameters = parametersOf(name);
  return parameters === null ? null : { gb: toGb(weightBytes(parameters, quantizationOf(name))), estimated: true };
}

const CLOUD = /[-:]cloud$/i;
