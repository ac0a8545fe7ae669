import { expect, test } from "bun:test";
import { normalizeModelName, sameModel, withoutNamespace } from "./model-name.ts";

test("no tag means :latest; a colon before the last slash is not a tag", () => {
  expect(normalizeModelName("llama3.2")).toBe("llama3.2:latest");
  expect(normalizeModelName(" qwen3:8b ")).toBe("qwen3:8b");
  expect(normalizeModelName("localhost:5000/org/model")).toBe("localhost:5000/org/model:latest");
  expect(sameModel("Llama3.2", "llama3.2:latest")).toBe(true);
});

test("the family part of a name is what follows its registry and namespace", () => {
  expect(withoutNamespace("hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M")).toBe("Qwen3-8B-GGUF:Q4_K_M");
  expect(withoutNamespace("qwen3:8b")).toBe("qwen3:8b");
});
