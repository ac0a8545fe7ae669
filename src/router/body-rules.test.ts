import { expect, test } from "bun:test";
import { adjustBody } from "./body-rules.ts";

const budget = (numPredict: number) => adjustBody({ options: { num_predict: numPredict } }, "qwen3:8b", { loadedContext: undefined, promptTokens: null }, "strip");

test("a thinking model's small cap is raised ×4 (at least 1024), a large one at most to 32768, a generous one left alone", () => {
  expect(budget(100).thinkingBudget).toEqual({ requested: 100, sent: 1024 });
  expect(budget(2000).thinkingBudget).toEqual({ requested: 2000, sent: 8000 });
  expect(budget(16000).thinkingBudget).toEqual({ requested: 16000, sent: 32768 });
  const claudeCode = budget(128_000);
  expect(claudeCode.thinkingBudget).toBeNull();
  expect((claudeCode.body.options as { num_predict: number }).num_predict).toBe(128_000);
});
