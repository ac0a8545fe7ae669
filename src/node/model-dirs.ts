// Where this machine keeps its models, as the programs that download them decide it from the
// environment: Ollama's model store and the Hugging Face hub cache (mlx_lm, mflux and the
// embedding servers download there).
import { homedir } from "node:os";
import { join } from "node:path";

type Env = Record<string, string | undefined>;

/** OLLAMA_MODELS, else ~/.ollama/models (Ollama's docs/faq.md, "Where are models stored?", for macOS). */
export function ollamaModelsDir(env: Env = process.env, home = homedir()): string {
  return env.OLLAMA_MODELS || join(home, ".ollama", "models");
}

/** HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME or ~/.cache, /huggingface/hub (huggingface_hub's environment variables reference). */
export function hfHubCache(env: Env = process.env, home = homedir()): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  return join(env.HF_HOME || join(env.XDG_CACHE_HOME || join(home, ".cache"), "huggingface"), "hub");
}

/** Where a hub cache keeps a repo's files (its refs, blobs and snapshots); fastembed lays out its own cache so too. */
export function hubRepoDir(repo: string, cache = hfHubCache()): string {
  return join(cache, `models--${repo.replaceAll("/", "--")}`);
}
