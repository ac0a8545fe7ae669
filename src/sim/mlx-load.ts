// How the simulated mlx_lm.server's model load goes: whether it fails, and the
// traceback Python prints when it does, in the generation thread (mlx-lm 0.31.3
// and later, which serve while they load) or in main() before serving (0.31.2).
import { existsSync } from "node:fs";
import type { MlxLmVersion } from "./mlx-versions.ts";

/** A Python exception: its qualified class name and its message (which may run over several lines). */
export interface PythonException {
  type: string;
  message: string;
}

/**
 * Why `model` cannot load, or null. mlx_lm/utils.py 0.32.0 _download: a path that exists is loaded from
 * disk; anything else is a Hugging Face repo id for snapshot_download, whose validate_repo_id refuses a
 * path (a "~" is not expanded: it is a character of the id). A well-formed id downloads: the sim has the hub.
 */
export function loadFailure(model: string): PythonException | null {
  if (existsSync(model)) return null;
  const type = "huggingface_hub.errors.HFValidationError";
  if (model.split("/").length > 2) return { type, message: `Repo id must be in the form 'repo_name' or 'namespace/repo_name': '${model}'. Use \`repo_type\` argument if needed.` };
  const name = /^[\w.-]+(\/[\w.-]+)?$/.test(model) && !/--|\.\.|(^|\/)[-.]|[-.]($|\/)/.test(model) && model.length <= 96;
  if (name) return null;
  return {
    type,
    message: `Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden, '-' and '.' cannot start or end the name, max length is 96: '${model}'.`,
  };
}

/** What the hub answers for a repo id nobody has (or that is gated to this user): its first line, then the URL asked. */
export function repositoryNotFound(repo: string): PythonException {
  return {
    type: "huggingface_hub.errors.RepositoryNotFoundError",
    message: `404 Client Error. (Request ID: Root=1-00000000-000000000000000000000000)\n\nRepository Not Found for url: https://huggingface.co/api/models/${repo}/revision/main.`,
  };
}

const SITE = "/opt/homebrew/lib/python3.12/site-packages";
const frame = (file: string, line: number, fn: string) => `  File "${file}", line ${line}, in ${fn}`;

/** The traceback Python writes to stderr for a load that fails in `version` (huggingface_hub's own frames left out). */
export function loadTraceback(version: MlxLmVersion, error: PythonException): string {
  const frames =
    version === "0.31.2"
      ? // mlx_lm/server.py 0.31.2: main() builds the ModelProvider, whose __init__ loads the model before run() binds.
        [
          "Traceback (most recent call last):",
          frame("/opt/homebrew/bin/mlx_lm.server", 8, "<module>"),
          frame(`${SITE}/mlx_lm/server.py`, 1883, "main"),
          frame(`${SITE}/mlx_lm/server.py`, 292, "__init__"),
          frame(`${SITE}/mlx_lm/server.py`, 326, "load"),
          frame(`${SITE}/mlx_lm/utils.py`, 489, "load"),
          frame(`${SITE}/mlx_lm/utils.py`, 249, "_download"),
        ]
      : // mlx_lm/server.py 0.32.0: ResponseGenerator's thread (_generate) loads the default model after the server binds; threading.excepthook reports its death.
        [
          "Exception in thread Thread-1 (_generate):",
          "Traceback (most recent call last):",
          frame("/opt/homebrew/lib/python3.12/threading.py", 1075, "_bootstrap_inner"),
          frame("/opt/homebrew/lib/python3.12/threading.py", 1012, "run"),
          frame(`${SITE}/mlx_lm/server.py`, 631, "_generate"),
          frame(`${SITE}/mlx_lm/server.py`, 367, "load_default"),
          frame(`${SITE}/mlx_lm/server.py`, 376, "load"),
          frame(`${SITE}/mlx_lm/server.py`, 330, "_load"),
          frame(`${SITE}/mlx_lm/utils.py`, 523, "load"),
          frame(`${SITE}/mlx_lm/utils.py`, 254, "_download"),
        ];
  return `${[...frames, `${error.type}: ${error.message}`].join("\n")}\n`;
}
