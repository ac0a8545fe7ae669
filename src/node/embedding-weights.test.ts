// What the agent reports of a declared embedding model, over a home folder the test lays out as
// the servers' downloads leave it.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { embeddingModel } from "./embedding-weights.ts";

const home = mkdtempSync(join(tmpdir(), "herd-weights-"));
// The hub cache under this home: none of the variables that move it.
const MOVERS = ["HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"];
const saved = MOVERS.map((k) => [k, process.env[k]] as const);
for (const k of MOVERS) delete process.env[k];
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  for (const [k, value] of saved) if (value !== undefined) process.env[k] = value;
});

const file = (path: string) => {
  mkdirSync(dirname(join(home, path)), { recursive: true });
  writeFileSync(join(home, path), "weights");
};

test("a model herd knows has its dimensions, and cached: false until its weights are on disk", async () => {
  expect(await embeddingModel("text", "nomic-embed-text", home)).toEqual({ name: "nomic-embed-text", dimensions: 768, cached: false });
  expect(await embeddingModel("vision", "dinov2-vit-s14", home)).toEqual({ name: "dinov2-vit-s14", dimensions: 384, cached: false });
});

test("text weights: a snapshot in the text server's fastembed cache, under the base repo's name", async () => {
  // An interrupted download leaves blobs but no snapshot.
  file(".fleet-manager/models/text-embedding/models--nomic-ai--nomic-embed-text-v1.5/blobs/0a1b.incomplete");
  expect((await embeddingModel("text", "nomic-embed-text", home)).cached).toBe(false);
  file(".fleet-manager/models/text-embedding/models--nomic-ai--nomic-embed-text-v1.5/snapshots/5b0e/onnx/model_quantized.onnx");
  expect(await embeddingModel("text", "nomic-embed-text:latest", home)).toEqual({ name: "nomic-embed-text:latest", dimensions: 768, cached: true });
});

test("vision weights: a snapshot in the hub cache, or the model's file in the vision server's folder", async () => {
  file(".cache/huggingface/hub/models--Qdrant--clip-ViT-B-32-vision/snapshots/9c1f/model.onnx");
  expect(await embeddingModel("vision", "clip-vit-b32", home)).toEqual({ name: "clip-vit-b32", dimensions: 512, cached: true });
  file(".fleet-manager/models/siglip2-base/onnx/vision_model_int8.onnx");
  expect(await embeddingModel("vision", "siglip2-base", home)).toEqual({ name: "siglip2-base", dimensions: 768, cached: true });
});

test("a model herd does not know is listed by name alone: nothing claimed of it", async () => {
  expect(await embeddingModel("text", "bge-m3", home)).toEqual({ name: "bge-m3" });
  expect(await embeddingModel("vision", "clip", home)).toEqual({ name: "clip" });
});
