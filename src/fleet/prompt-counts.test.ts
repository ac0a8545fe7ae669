import { expect, test } from "bun:test";
import { MAX_RATIO, MIN_PROMPT_TOKENS, MIN_RATIO, PromptCounts, SAFETY_MARGIN } from "./prompt-counts.ts";
import { ALPHA } from "./speeds.ts";

test("before the model answers, herd's own figure sizes the prompt", () => {
  const c = new PromptCounts();
  expect(c.expected("llama3.1:8b", 3637)).toBe(3637);
  expect(c.ratio("llama3.1:8b")).toBeNull();
});

test("after an answer, the figure × the node's ratio, with the margin: never below the node's own count plus the margin", () => {
  const c = new PromptCounts();
  c.observe("llama3.1:8b", 3637, 2406, 4096);
  expect(c.ratio("llama3.1:8b")).toBeCloseTo(2406 / 3637);
  expect(c.expected("llama3.1:8b", 3637)).toBeGreaterThanOrEqual(2406 * (1 + SAFETY_MARGIN));
  expect(c.expected("llama3.1:8b", 3637)).toBeLessThan(3637);
  // Kept per model (its tokenizer), under the name Ollama resolves it to.
  expect(c.ratio("mistral")).toBeNull();
  c.observe("mistral", 1000, 700, null);
  expect(c.ratio("mistral:latest")).toBeCloseTo(0.7);
  expect(c.expected("qwen3:8b", 3637)).toBe(3637);
});

test("the ratio is a decaying average, bounded, from prompts big enough to tell", () => {
  const c = new PromptCounts();
  c.observe("m", 1000, 600, null);
  c.observe("m", 1000, 1000, null);
  expect(c.ratio("m")).toBeCloseTo(0.6 + ALPHA * (1 - 0.6));
  c.observe("m", MIN_PROMPT_TOKENS - 1, 10 * MIN_PROMPT_TOKENS, null); // a tiny prompt: the template's tokens, noise
  c.observe("m", 1000, undefined, null); // an answer that reports no count
  expect(c.ratio("m")).toBeCloseTo(0.6 + ALPHA * (1 - 0.6));
  const far = new PromptCounts();
  far.observe("m", 1000, 50, null);
  expect(far.ratio("m")).toBe(MIN_RATIO);
  far.observe("n", 1000, 9000, null);
  expect(far.ratio("n")).toBe(MAX_RATIO);
});

test("a count that fills the context it ran in is not learned: Ollama may have cut that prompt", () => {
  const c = new PromptCounts();
  c.observe("m", 6000, 4096, 4096);
  expect(c.ratio("m")).toBeNull();
  expect(c.expected("m", 6000)).toBe(6000);
});
