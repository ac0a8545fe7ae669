import { expect, test } from "bun:test";
import { PromptCounts, SAFETY_MARGIN } from "../fleet/prompt-counts.ts";
import { adjustOptions, fitOn } from "./body-rules.ts";
import type { NodeContext } from "./context-size.ts";

const loadedAt = (loaded: number | undefined, trained: number | null = null): NodeContext => ({ loaded, automatic: 4096, trained });

const budget = (numPredict: number, model = "qwen3:8b", think?: boolean) =>
  adjustOptions({ options: { num_predict: numPredict }, think }, model, { at: loadedAt(undefined), promptTokens: null }, "strip");

test("a thinking model's small cap is raised ×4 (at least 1024), a large one at most to 32768, a generous one left alone", () => {
  expect(budget(100).thinkingBudget).toEqual({ requested: 100, sent: 1024 });
  expect(budget(2000).thinkingBudget).toEqual({ requested: 2000, sent: 8000 });
  expect(budget(16000).thinkingBudget).toEqual({ requested: 16000, sent: 32768 });
  const claudeCode = budget(128_000);
  expect(claudeCode.thinkingBudget).toEqual({ requested: 128_000, sent: 128_000 });
  expect(claudeCode.options.num_predict).toBe(128_000);
  expect(claudeCode.notes).toEqual([]);
  // No cap: Ollama's -1, none.
  expect(adjustOptions({ options: {} }, "qwen3:8b", { at: loadedAt(undefined), promptTokens: null }, "strip").thinkingBudget).toEqual({ requested: null, sent: -1 });
});

test("every reasoning family gets the budget, EXAONE Deep (which thinks in its answer text) too; a model told not to think keeps its cap, one that does not think has no budget", () => {
  expect(budget(100, "exaone-deep:7.8b").thinkingBudget).toEqual({ requested: 100, sent: 1024 });
  expect(budget(100, "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M").thinkingBudget).toEqual({ requested: 100, sent: 1024 });
  expect(budget(100, "qwen3:8b", false).thinkingBudget).toEqual({ requested: 100, sent: 100 });
  expect(budget(100, "llama3.2:3b").thinkingBudget).toBeNull();
});

test("num_ctx is sized from the model's own count of herd's prompts once it has answered, never below that count plus the margin", () => {
  const req = { kind: "chat" as const, promptTokens: 3637, options: {} };
  const numCtx = (counts: PromptCounts) => adjustOptions(req, "llama3.1:8b", fitOn(req, "llama3.1:8b", loadedAt(4096), counts), "strip").options.num_ctx;
  const counts = new PromptCounts();
  expect(numCtx(counts)).toBe(8192); // before any answer: the estimate, as ever
  counts.observe("llama3.1:8b", 3637, 2406, 4096);
  expect(numCtx(counts)).toBe(4096);
  expect(fitOn(req, "llama3.1:8b", loadedAt(4096), counts).promptTokens).toBeGreaterThanOrEqual(2406 * (1 + SAFETY_MARGIN));
  // A model whose tokenizer counts more than the estimate gets more room, not less.
  const fits = { ...req, promptTokens: 3000 };
  counts.observe("qwen3:8b", 3000, 3600, null);
  expect(adjustOptions(fits, "qwen3:8b", fitOn(fits, "qwen3:8b", loadedAt(4096), counts), "strip").options.num_ctx).toBe(8192);
});

test("a client's num_ctx past the model's trained context is cut to it; a prompt past the context it runs in is an overflow", () => {
  const req = { kind: "chat" as const, promptTokens: 9000, options: { num_ctx: 1073741824 } };
  const cut = adjustOptions(req, "llama3.2:3b", fitOn(req, "llama3.2:3b", loadedAt(undefined, 131072), new PromptCounts()), "strip");
  expect(cut.options.num_ctx).toBe(131072);
  expect(cut.notes).toEqual(["num_ctx 1073741824 cut to the model's trained context (131072)"]);
  const small = { ...req, options: { num_ctx: 4096 } };
  expect(adjustOptions(small, "llama3.2:3b", fitOn(small, "llama3.2:3b", loadedAt(undefined, 131072), new PromptCounts()), "passthrough").overflow).toEqual({ estimated: 9000, contextLength: 4096 });
});
