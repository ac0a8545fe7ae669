// The environment `herd service` keeps for herd and what herd starts (mlx_lm.server, ffmpeg): launchd
// starts a job with almost none of the user's shell environment, only what the plist's
// EnvironmentVariables hold (launchd.plist(5)). Kept: PATH, what the user names with --env, and the
// Hugging Face and Ollama variables set at install. A secret is kept only when named: the plist is a
// file on disk, and `launchctl print` shows a job's environment (its "environment = {" section).
import { join } from "node:path";

/** The variables kept without being named: huggingface_hub's (HF_HOME, HF_HUB_CACHE, …) and Ollama's (OLLAMA_HOST, OLLAMA_MODELS, …). */
const KEPT_PREFIXES = ["HF_", "OLLAMA_"];
/** A name that says its value is a credential; one ending in _PATH, _FILE or _DIR names where a credential is. */
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD/i;
const NAMES_A_PLACE = /_(PATH|FILE|DIR)$/i;
/** The most --env names one install takes. */
export const MAX_NAMED = 64;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_NAME = 128;
const MAX_VALUE = 32_768;
// XML 1.0 cannot carry other control characters, so a plist cannot either.
const UNWRITABLE = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;

export interface Kept {
  name: string;
  value: string;
  secret: boolean;
}

export interface ServiceEnv {
  kept: Kept[];
  /** HF_*, OLLAMA_* variables set at install but not kept (a secret, a value a plist cannot carry), and why. */
  leftOut: { name: string; why: string }[];
}

/** Why `name` cannot be kept with --env, or null when it can. */
export function envNameProblem(name: string, env: Record<string, string | undefined>): string | null {
  if (name.includes("=")) return "takes a variable's name, not NAME=VALUE: export the variable in this shell, then name it here";
  if (!NAME.test(name) || name.length > MAX_NAME) return `expected an environment variable's name (letters, digits and _, at most ${MAX_NAME})`;
  if (env[name] === undefined) return `${name} is not set in this shell: export it, then install again`;
  return valueProblem(env[name]!);
}

function valueProblem(value: string): string | null {
  if (value.length > MAX_VALUE) return `its value is longer than ${MAX_VALUE} characters`;
  if (UNWRITABLE.test(value)) return "its value holds a control character a plist cannot carry";
  return null;
}

export const isSecret = (name: string) => SECRET_NAME.test(name) && !NAMES_A_PLACE.test(name);

/** PATH, the named variables in their order, then the HF_*, OLLAMA_* ones set now, by name; each once. */
export function serviceEnvironment(env: Record<string, string | undefined>, named: readonly string[]): ServiceEnv {
  const kept = new Map<string, Kept>();
  const leftOut: ServiceEnv["leftOut"] = [];
  const keep = (name: string) => kept.set(name, { name, value: env[name]!, secret: isSecret(name) });
  kept.set("PATH", { name: "PATH", value: env.PATH ?? "/usr/bin:/bin:/usr/sbin:/sbin", secret: false });
  for (const name of named) keep(name);
  const byDefault = Object.keys(env).filter((name) => KEPT_PREFIXES.some((p) => name.startsWith(p)) && NAME.test(name) && !kept.has(name));
  for (const name of byDefault.sort()) {
    const problem = isSecret(name) ? "a secret (the plist and `launchctl print` would show it)" : valueProblem(env[name]!);
    if (problem) leftOut.push({ name, why: problem });
    else keep(name);
  }
  return { kept: [...kept.values()], leftOut };
}

/** What install says it keeps: names and values, a secret's value never ("(set)"). */
export function keptLine({ kept }: ServiceEnv): string {
  return `environment: ${kept.map((k) => (k.secret ? `${k.name} (set)` : `${k.name}=${k.value}`)).join(", ")}`;
}

/** One line per variable left out: why, and for a secret where it belongs instead. */
export function leftOutLines({ leftOut }: ServiceEnv, env: Record<string, string | undefined>, home: string): string[] {
  return leftOut.map(({ name, why }) => {
    if (!isSecret(name)) return `not kept: ${name}: ${why}`;
    // huggingface_hub reads its token from HF_TOKEN_PATH, else HF_HOME/token (huggingface_hub constants.py), which `hf auth login` writes.
    const tokenFile = env.HF_TOKEN_PATH ?? join(env.HF_HOME ?? join(home, ".cache", "huggingface"), "token");
    const instead = name === "HF_TOKEN" ? `; huggingface_hub reads ${tokenFile} (\`hf auth login\` writes it) without it` : "";
    return `not kept: ${name}, ${why}${instead}; --env ${name} keeps it anyway`;
  });
}

/** What install says about a secret it did keep, by name. */
export function secretsLine({ kept }: ServiceEnv, path: string, readers: string): string | null {
  const secrets = kept.filter((k) => k.secret).map((k) => k.name);
  if (!secrets.length) return null;
  return `${secrets.join(", ")} ${secrets.length > 1 ? "are" : "is"} in ${path}, which only ${readers} can read (0600); \`launchctl print\` shows a job's environment to those who may query its domain`;
}
