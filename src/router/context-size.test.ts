import { expect, test } from "bun:test";
import { contextSize } from "./context-size.ts";

test("a prompt that fits the default context is left alone", () => {
  expect(contextSize(1000, 512, undefined)).toBeNull();
});

test("a loaded runner is kept: its num_ctx is sent, so Ollama does not reload it", () => {
  expect(contextSize(1000, null, 32768)).toEqual({ numCtx: 32768, note: null });
});

test("a prompt larger than the context gets the next power of two, with room for the reply, and says why", () => {
  const size = contextSize(11_300, 128_000, 4096)!;
  expect(size.numCtx).toBe(32768); // 11,300 + 8,192 of reply room
  expect(size.note).toBe("num_ctx 32768: the prompt (~11300 tokens) and room for the reply (8192) outgrow the loaded context (4096)");
  expect(contextSize(5000, 200, undefined)!.numCtx).toBe(8192);
});
