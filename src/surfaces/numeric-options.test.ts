import { expect, test } from "bun:test";
import { numericOptions } from "./numeric-options.ts";

test("each number goes under Ollama's name; a missing or null one is left out", () => {
  expect(numericOptions([["max_tokens", "num_predict", 100], ["top_p", "top_p", null], ["seed", "seed", undefined], ["temperature", "temperature", 0]])).toEqual({ num_predict: 100, temperature: 0 });
});

test("a value that is not a number is refused under the client's name", () => {
  expect(numericOptions([["temperature", "temperature", 0.5], ["max_output_tokens", "num_predict", "100"]])).toBe("max_output_tokens: expected a number");
});
