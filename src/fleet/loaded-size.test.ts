import { expect, test } from "bun:test";
import { guessedKvGbPerToken, kvGbPerToken, loadedSizeGb } from "./loaded-size.ts";
import { nodeView } from "./test-fixtures.ts";

test("with no node showing it loaded, the KV cache per token is guessed from the model's size, near real architectures'", () => {
  // llama3.1:8b (4.9 GB): 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 128 KiB.
  expect(guessedKvGbPerToken(4.9) * 1e9).toBeGreaterThan(100 * 1024);
  expect(guessedKvGbPerToken(4.9) * 1e9).toBeLessThan(140 * 1024);
  // llama3.3:70b (42.5 GB): 2 × 80 × 8 × 128 × 2 = 320 KiB.
  expect(guessedKvGbPerToken(42.5) * 1e9 / 1024).toBeCloseTo(340, -2);
});

test("a node that has the model loaded at a known context tells its cache per token, for every other node", () => {
  const weights = 4.9;
  const at = (contextLength: number, sizeGb: number) =>
    nodeView("a", { loaded: [{ name: "llama3.1:8b", sizeGb, contextLength }], available: [{ name: "llama3.1:8b", sizeGb: weights }] });
  // 21.9 GB at 131072 tokens: 16.75 GB of cache beside the weights and their 5% graph.
  const perToken = kvGbPerToken("llama3.1:8b", weights, [nodeView("b"), at(131072, 21.9)]);
  expect(perToken * 131072).toBeCloseTo(21.9 - weights * 1.05, 5);
  // So the same model on a Mac that gives it 4096 tokens takes little more than its weights; at 131072, four times them.
  expect(loadedSizeGb(weights, perToken, 4096, 1)).toBeCloseTo(5.67, 1);
  expect(loadedSizeGb(weights, perToken, 131072, 1)).toBeCloseTo(21.9, 5);
  // Two parallel slots hold two caches.
  expect(loadedSizeGb(weights, perToken, 4096, 2)).toBeCloseTo(6.2, 1);
  // A report without its context teaches nothing: the guess stands.
  expect(kvGbPerToken("llama3.1:8b", weights, [nodeView("c", { loaded: [{ name: "llama3.1:8b", sizeGb: 21.9 }] })])).toBe(guessedKvGbPerToken(weights));
});
