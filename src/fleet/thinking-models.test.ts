import { expect, test } from "bun:test";
import { effortThink, reasons, takesThink, takesThinkLevel } from "./thinking-models.ts";

test("reasoning families are read from the name, whatever its namespace, tag or case", () => {
  for (const name of ["qwen3:8b", "gpt-oss:20b", "deepseek-r1:14b", "qwq", "magistral:24b", "phi4-reasoning:14b", "cogito:8b", "exaone-deep:7.8b", "library/qwen3:30b", "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M", "GPT-OSS:120b"]) {
    expect(reasons(name)).toBe(true);
  }
  for (const name of ["qwen3-coder:30b", "qwen2.5:7b", "llama3.2:3b", "phi4:14b", "deepseek-coder-v2:16b", "nomic-embed-text"]) expect(reasons(name)).toBe(false);
});

test("EXAONE Deep reasons in its answer text: Ollama's think switch does not reach it", () => {
  expect(takesThink("exaone-deep:7.8b")).toBe(false);
  expect(takesThink("qwen3:8b")).toBe(true);
  expect(takesThink("llama3.2:3b")).toBe(false);
});

test("gpt-oss takes a thinking level", () => {
  expect(takesThinkLevel("gpt-oss:20b")).toBe(true);
  expect(takesThinkLevel("GPT-OSS:120b")).toBe(true);
  expect(takesThinkLevel("qwen3:8b")).toBe(false);
});

test("a reasoning effort is Ollama's think: a level for gpt-oss, on or off for other thinking models, nothing for a model without the switch", () => {
  expect(effortThink(undefined, "qwen3:8b")).toBeUndefined();
  expect(effortThink("high", "qwen3:8b")).toBe(true);
  expect(effortThink("none", "qwen3:8b")).toBe(false);
  expect(effortThink("low", "gpt-oss:20b")).toBe("low");
  expect(effortThink("xhigh", "GPT-OSS:120b")).toBe("high");
  expect(effortThink("medium", "llama3.2:3b")).toBeUndefined();
  // EXAONE Deep reasons in its answer text; Ollama refuses think:true for it.
  expect(effortThink("high", "exaone-deep:7.8b")).toBeUndefined();
});
