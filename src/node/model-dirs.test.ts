// Where models live, from the environment as Ollama and huggingface_hub read it.
import { expect, test } from "bun:test";
import { hfHubCache, hubRepoDir, ollamaModelsDir } from "./model-dirs.ts";

const HOME = "/Users/ann";

test("Ollama's store: OLLAMA_MODELS, else ~/.ollama/models", () => {
  expect(ollamaModelsDir({}, HOME)).toBe("/Users/ann/.ollama/models");
  expect(ollamaModelsDir({ OLLAMA_MODELS: "/Volumes/Models/ollama" }, HOME)).toBe("/Volumes/Models/ollama");
});

test("the hub cache: HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub", () => {
  expect(hfHubCache({}, HOME)).toBe("/Users/ann/.cache/huggingface/hub");
  expect(hfHubCache({ XDG_CACHE_HOME: "/Users/ann/Caches" }, HOME)).toBe("/Users/ann/Caches/huggingface/hub");
  expect(hfHubCache({ HF_HOME: "/Volumes/Models/hf", XDG_CACHE_HOME: "/Users/ann/Caches" }, HOME)).toBe("/Volumes/Models/hf/hub");
  expect(hfHubCache({ HF_HUB_CACHE: "/Volumes/Models/hub", HF_HOME: "/Volumes/Models/hf" }, HOME)).toBe("/Volumes/Models/hub");
});

test("a repo's folder in a hub cache", () => {
  expect(hubRepoDir("mlx-community/Qwen3-8B-4bit", "/hub")).toBe("/hub/models--mlx-community--Qwen3-8B-4bit");
});
