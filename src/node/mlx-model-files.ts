// What an MLX model's files on this node say: how big its weights are and how long a
// context it was trained for (its config.json). A model is a local folder, or a
// Hugging Face repo id whose files are in the hub cache once mlx_lm has downloaded them.
import { readdir, readFile, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { MAX_CONTEXT_LENGTH } from "../fleet/heartbeat.ts";
import { hubRepoDir } from "./model-dirs.ts";

const GB = 1024 ** 3;

/** "~/…" as the home folder's path; anything else as it is. mlx_lm expands no "~": it takes such a path for a repo id. */
export function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
}

/** A model named by a path ("/…", "./…", "~/…") rather than a repo id, with "~" expanded; null for a repo id. */
function localDir(model: string): string | null {
  const local = expandHome(model);
  return isAbsolute(local) || local.startsWith(".") ? local : null;
}

/** The weights' size: a local folder's files, or the model's blobs in the hub cache; 0 when not there (yet). */
export async function modelSizeGb(model: string): Promise<number> {
  const dir = localDir(model) ?? join(hubRepoDir(model), "blobs");
  try {
    const files = await readdir(dir, { recursive: true });
    const sizes = await Promise.all(files.map((f) => stat(join(dir, f)).then((st) => (st.isFile() ? st.size : 0), () => 0)));
    return sizes.reduce((a, b) => a + b, 0) / GB;
  } catch {
    return 0;
  }
}

/**
 * The context the model was trained for: config.json's max_position_embeddings (a vision-language model's in
 * text_config), from a local folder or the hub cache's snapshot of main (else any snapshot); null when unknown.
 */
export async function trainedContext(model: string): Promise<number | null> {
  const local = localDir(model);
  const config = await readJson(local ? join(local, "config.json") : await snapshotConfig(hubRepoDir(model)));
  const found = config?.max_position_embeddings ?? config?.text_config?.max_position_embeddings;
  return Number.isInteger(found) && found > 0 && found <= MAX_CONTEXT_LENGTH ? found : null;
}

async function snapshotConfig(repo: string): Promise<string> {
  const main = await readFile(join(repo, "refs", "main"), "utf8").catch(() => null);
  const snapshot = main?.trim() || (await readdir(join(repo, "snapshots")).catch(() => []))[0] || "";
  return join(repo, "snapshots", snapshot, "config.json");
}

// A config.json is a few kB; anything unreadable is no answer.
async function readJson(path: string): Promise<Record<string, any> | null> {
  try {
    const value = JSON.parse(await readFile(path, "utf8"));
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}
