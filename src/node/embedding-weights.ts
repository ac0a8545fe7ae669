// What the agent can know of a native embedding model without its server: the length of its
// vectors and whether its weights are on this disk, for the models of the servers seed 000
// describes (Ollama Herd's fastembed text server and ONNX vision server; facts from its
// node/text_embedding_models.py and node/embedding_models.py). So the heartbeat can say
// "weights cached, server not running", which is what the backend-missing checks look for.
import { readdir, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Heartbeat } from "../fleet/heartbeat.ts";
import { hfHubCache, hubRepoDir } from "./model-dirs.ts";

export type EmbeddingKind = "text" | "vision";
export type EmbeddingModel = NonNullable<Heartbeat["text_embedding"]>["models_available"][number];

interface Known {
  dimensions: number;
  /** The Hugging Face repo its weights come from. */
  repo: string;
  /** A vision model's file, which that server downloads into a folder of its own. */
  file?: string;
}

const KNOWN: Record<EmbeddingKind, Record<string, Known>> = {
  // fastembed serves nomic-embed-text-v1.5-Q from the base repo's files.
  text: { "nomic-embed-text": { dimensions: 768, repo: "nomic-ai/nomic-embed-text-v1.5" } },
  vision: {
    "dinov2-vit-s14": { dimensions: 384, repo: "sefaburak/dinov2-small-onnx", file: "dinov2_vits14.onnx" },
    "siglip2-base": { dimensions: 768, repo: "onnx-community/siglip2-base-patch16-224-ONNX", file: "onnx/vision_model_int8.onnx" },
    "clip-vit-b32": { dimensions: 512, repo: "Qdrant/clip-ViT-B-32-vision", file: "model.onnx" },
  },
};

/**
 * Where a model's weights are once downloaded. Text: the text server's fastembed cache (seed 000:
 * ~/.fleet-manager/models/text-embedding/), laid out as the hub's. Vision: the hub cache (seed 000), or the
 * vision server's own folder per model (~/.fleet-manager/models/NAME/FILE).
 */
function weightPaths(kind: EmbeddingKind, name: string, known: Known, home: string): string[] {
  const models = join(home, ".fleet-manager", "models");
  if (kind === "text") return [join(hubRepoDir(known.repo, join(models, "text-embedding")), "snapshots")];
  return [join(hubRepoDir(known.repo, hfHubCache(process.env, home)), "snapshots"), join(models, name, known.file!)];
}

/** A file, or a folder with something in it (a hub snapshot appears once a download has finished). */
async function present(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile() || (await readdir(path)).length > 0;
  } catch {
    return false;
  }
}

/** A declared model as the heartbeat lists it: its dimensions and `cached` where herd knows the model, its name alone where not. */
export async function embeddingModel(kind: EmbeddingKind, name: string, home = homedir()): Promise<EmbeddingModel> {
  const known = KNOWN[kind][name.replace(/:latest$/, "")];
  if (!known) return { name };
  const found = await Promise.all(weightPaths(kind, name.replace(/:latest$/, ""), known, home).map(present));
  return { name, dimensions: known.dimensions, cached: found.includes(true) };
}
