import { expect, test } from "bun:test";
import { automaticContextShown, defaultContext, defaultParallel, effectiveContext, gpuMemoryGiB, parseVersion, servesImages } from "./ollama-releases.ts";

test("versions as Ollama prints them; anything else cannot be placed", () => {
  expect([parseVersion("0.9.7"), parseVersion("v0.33.0-rc2"), parseVersion("0.13"), parseVersion("dev"), parseVersion(null)]).toEqual([[0, 9, 7], [0, 33, 0], [0, 13, 0], null, null]);
});

test("one slot per model since 0.9.7, four before; a release herd cannot place is taken as current", () => {
  expect([defaultParallel("0.9.6"), defaultParallel("0.9.7"), defaultParallel("0.33.0"), defaultParallel(null)]).toEqual([4, 1, 1, 1]);
});

test("Metal's working set: two thirds of the memory up to 32 GiB, three quarters above", () => {
  expect([16, 32, 36, 64, 192].map((gb) => Math.round(gpuMemoryGiB(gb) * 10) / 10)).toEqual([10.7, 21.3, 27, 48, 144]);
});

test("the default context by release and memory; known only when herd can place both", () => {
  expect([16, 32, 36, 48, 64, 192].map((gb) => defaultContext("0.33.0", gb).numCtx)).toEqual([4096, 4096, 32768, 32768, 262144, 262144]);
  expect(defaultContext("0.15.4", 192)).toEqual({ numCtx: 4096, known: true });
  expect(defaultContext("0.15.5", null)).toEqual({ numCtx: 4096, known: false });
  expect(defaultContext("nightly", 192)).toEqual({ numCtx: 4096, known: false });
});

test("a loaded model's context shows a node's automatic tier, and the least memory that gives it", () => {
  // Past 32768: only the biggest tier (a model's trained 131072 cut from 262144); 32768 exactly: the middle one or more.
  expect([131072, 262144, 32768].map(automaticContextShown)).toEqual([
    { numCtx: 262144, memoryGiB: 47 / 0.75 },
    { numCtx: 262144, memoryGiB: 47 / 0.75 },
    { numCtx: 32768, memoryGiB: 32 },
  ]);
  // What the tier needs: the memory whose working set reaches it.
  expect(defaultContext("0.33.0", 47 / 0.75).numCtx).toBe(262144);
  // Any other context (a model trained on 8192, a client's num_ctx) says nothing.
  expect([0, 4096, 8192, 16384].map(automaticContextShown)).toEqual([null, null, null, null]);
});

test("a context past the trained one is cut to it", () => {
  expect([effectiveContext(262144, 131072), effectiveContext(8192, 131072), effectiveContext(1 << 30, null)]).toEqual([131072, 8192, 1 << 30]);
});

test("image generation from 0.14.3 until 0.32.6", () => {
  expect(["0.14.2", "0.14.3", "0.32.5", "0.32.6", "0.33.0", null].map(servesImages)).toEqual([false, true, true, false, false, false]);
});
