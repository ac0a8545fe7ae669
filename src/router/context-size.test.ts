import { expect, test } from "bun:test";
import { contextSize, type NodeContext } from "./context-size.ts";

const at = (loaded: number | undefined, automatic = 4096, trained: number | null = 131072): NodeContext => ({ loaded, automatic, trained });

test("nothing loaded and the node's own choice fits: no num_ctx (Ollama picks, at its size for the machine)", () => {
  expect(contextSize(1000, 512, at(undefined))).toEqual({ numCtx: undefined, note: null, overflow: null });
  // A 64 GB Mac picks 262144, cut to the model's 131072: a 5,000-token prompt is not shrunk to 8192.
  expect(contextSize(5000, null, at(undefined, 262144))).toEqual({ numCtx: undefined, note: null, overflow: null });
});

test("a loaded runner is kept: its num_ctx is sent, so Ollama does not reload it", () => {
  expect(contextSize(1000, null, at(32768))).toEqual({ numCtx: 32768, note: null, overflow: null });
});

test("a prompt larger than the context gets the next power of two, with room for the reply, and says why", () => {
  const size = contextSize(11_300, 128_000, at(4096));
  expect(size.numCtx).toBe(32768); // 11,300 + 8,192 of reply room
  expect(size.note).toBe("num_ctx 32768: the prompt (~11300 tokens) and room for the reply (8192) outgrow the loaded context (4096)");
  expect(contextSize(5000, 200, at(undefined)).numCtx).toBe(8192);
});

test("outgrowing a loaded runner the node's own choice would fit: that choice, so later requests asking none keep it", () => {
  expect(contextSize(5000, null, at(4096, 32768)).numCtx).toBe(32768);
});

test("never past the trained context: a prompt that fits there gets it, one that does not is an overflow", () => {
  expect(contextSize(125_000, 8192, at(undefined, 32768))).toMatchObject({ numCtx: 131072, overflow: null, note: expect.stringContaining("capped at the model's trained context") });
  expect(contextSize(150_000, null, at(undefined, 32768)).overflow).toEqual({ estimated: 150_000, contextLength: 131072 });
  // Already loaded at the trained context: kept, and the overflow said.
  expect(contextSize(150_000, null, at(131072, 32768))).toEqual({ numCtx: 131072, note: null, overflow: { estimated: 150_000, contextLength: 131072 } });
  // With nothing loaded and the node's own choice the trained context, asking for it is asking for nothing.
  expect(contextSize(150_000, null, at(undefined, 262144))).toEqual({ numCtx: undefined, note: null, overflow: { estimated: 150_000, contextLength: 131072 } });
  // Unknown trained context: no cap.
  expect(contextSize(150_000, null, at(undefined, 4096, null)).numCtx).toBe(262144);
});
