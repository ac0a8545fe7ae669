import { expect, test } from "bun:test";
import { canSubstitute, modelTraits } from "./model-traits.ts";

test("a name's kind: embedding, then vision, then coding, then reasoning, else general", () => {
  expect(modelTraits("nomic-embed-text").category).toBe("embedding");
  expect(modelTraits("llava:7b")).toEqual({ category: "vision", vision: true, tools: false });
  expect(modelTraits("qwen3-coder:30b").category).toBe("coding");
  expect(modelTraits("hf.co/org/QwQ-32B-GGUF:Q4_K_M").category).toBe("reasoning");
  expect(modelTraits("llama3.1:8b")).toEqual({ category: "general", vision: false, tools: true });
});

test("a stand-in is of the same kind and has what the request needs", () => {
  expect(canSubstitute("qwen2.5-coder:32b", "qwen2.5-coder:7b", { vision: false, tools: true })).toBe(true);
  expect(canSubstitute("llama3.1:8b", "nomic-embed-text", { vision: false, tools: false })).toBe(false);
  expect(canSubstitute("llama3.1:8b", "phi4:14b", { vision: false, tools: true })).toBe(false);
  expect(canSubstitute("gemma3:12b", "llava:7b", { vision: true, tools: false })).toBe(true);
});
