import { expect, test } from "bun:test";
import { expectedSizeGb, parametersOf, quantizationOf } from "./model-size.ts";

test("a name's parameter count: its tag's, else the model's own name's; the first count is the total", () => {
  expect(parametersOf("llama3.1:405b")).toBe(405e9);
  expect(parametersOf("qwen2.5-coder:1.5b-instruct-q8_0")).toBe(1.5e9);
  expect(parametersOf("qwen3:235b-a22b")).toBe(235e9);
  expect(parametersOf("mixtral:8x7b")).toBe(56e9);
  expect(parametersOf("mxbai-embed-large:335m")).toBe(335e6);
  expect(parametersOf("hf.co/bartowski/Llama-3.1-405B-Instruct-GGUF:Q4_K_M")).toBe(405e9);
  // A version, a quantization or "4bit" is no count.
  for (const name of ["llama3.2", "codestral:latest", "hf.co/org/repo:Q4_K_M", "mlx-community/model-4bit"]) expect(parametersOf(name)).toBeNull();
});

test("a tag's quantization, else the library's default Q4_K_M", () => {
  expect(quantizationOf("qwen2.5:7b-instruct-q8_0")).toBe("Q8_0");
  expect(quantizationOf("llama3.1:8b-instruct-fp16")).toBe("F16");
  expect(quantizationOf("hf.co/org/repo:Q5_K_M")).toBe("Q5_K_M");
  expect(quantizationOf("llama3.1:405b")).toBe("Q4_K_M");
});

test("the catalog's figure where it has one, else the weights the name tells; nothing for a cloud model or a name that says no size", () => {
  expect(expectedSizeGb("qwen3:235b")).toEqual({ gb: 150, estimated: false });
  // 405e9 weights at Q4_K_M's 4.85 bits: ~0.6 bytes each.
  expect(expectedSizeGb("llama3.1:405b")).toEqual({ gb: 228.7, estimated: true });
  expect(expectedSizeGb("llama3.1:405b-instruct-q8_0")!.gb).toBeCloseTo((405e9 * 8.5) / 8 / 1024 ** 3, 0);
  expect(expectedSizeGb("gpt-oss:120b-cloud")).toBeNull();
  expect(expectedSizeGb("codestral")).toBeNull();
});
