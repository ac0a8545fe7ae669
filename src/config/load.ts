// Reads a config file (.ts/.js, .json, .yaml), validates it and returns an
// immutable snapshot with the content hash that GitOps rollouts can compare.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, extname, isAbsolute, resolve } from "node:path";
import * as v from "valibot";
import YAML from "yaml";
import { authProblems } from "./credentials/keys.ts";
import { resolveSecrets } from "./credentials/secrets.ts";
import { type ConfigFile, graphHash, importGraph, isScript, readGraph, SyntaxProblems } from "./graph.ts";
import { formatIssues, formatPath, nearest } from "./problems.ts";
import { type Config, EVERY_NODE, herdConfigSchema } from "./schema.ts";
import { within } from "../within.ts";

export interface ConfigSource {
  /** Absolute path of the file, or null when herd runs on defaults. */
  path: string | null;
  /** First 12 hex digits of the SHA-256 of the file and every file it imports ("defaults" without a file). */
  hash: string;
  /** The file and every file it imports: what a live config watches. */
  files: string[];
  loadedAt: number;
}

export interface ConfigSnapshot {
  readonly config: Config;
  readonly source: ConfigSource;
}

/** A config that cannot be used; `problems` has one precise line each. */
export class ConfigError extends Error {
  constructor(
    readonly file: string | null,
    readonly problems: string[],
    /** Hash of the content that failed, so the same bad save is reported once. */
    readonly hash: string | null = null,
  ) {
    super(`${file ? basename(file) : "config"}: ${problems.join("; ")}`);
  }
}

export interface LoadOptions {
  /**
   * "lenient" for a node agent: it needs only its own credential, so a secret meant for the router
   * (an env var set only there) is no error. "unchecked" for CI: references are checked for shape, none is read.
   * Default "strict": every secret must be readable.
   */
  secrets?: "strict" | "lenient" | "unchecked";
}

export const CONFIG_NAMES = ["herd.config.ts", "herd.config.js", "herd.config.json", "herd.config.yaml", "herd.config.yml"];

/** The file to load: an explicit path, else the first herd.config.* in `dir`, else null. */
export function findConfig(explicit: string | undefined, dir = process.cwd()): string | null {
  if (explicit) return resolve(dir, explicit);
  const found = CONFIG_NAMES.map((n) => resolve(dir, n)).find((p) => existsSync(p));
  return found ?? null;
}

export function defaultSnapshot(): ConfigSnapshot {
  return { config: parseConfig({}), source: { path: null, hash: "defaults", files: [], loadedAt: Date.now() } };
}

export async function loadConfig(path: string, opts: LoadOptions = {}): Promise<ConfigSnapshot> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : `cannot read it (${(e as Error).message})`;
    throw new ConfigError(path, [`${why}; pass --config PATH, set HERD_CONFIG, or run \`herd init\``]);
  }
  let files: ConfigFile[];
  try {
    files = readGraph(path, text);
  } catch (e) {
    const problems = e instanceof SyntaxProblems ? e.problems : [(e as Error).message];
    // The hash that reports one bad save once covers the problems: they may be in a file the main one imports.
    throw new ConfigError(path, problems, graphHash([{ path, text: text + problems.join("\n") }]));
  }
  const hash = graphHash(files);
  try {
    const config = parseConfig(await evaluate(files), path, opts);
    return { config: resolvePaths(config, path), source: { path, hash, files: files.map((f) => f.path), loadedAt: Date.now() } };
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(path, e.problems, hash);
    throw e;
  }
}

/** Validates plain data as a config; throws ConfigError with every problem found, in one pass. */
export function parseConfig(raw: unknown, file: string | null = null, opts: LoadOptions = {}): Config {
  // abortPipeEarly: one message per bad value (not "a whole number" and "at least 0" for the same -1.5).
  const result = v.safeParse(herdConfigSchema, raw, { abortPipeEarly: true });
  const fleet = fleetProblems(raw);
  if (!result.success) throw new ConfigError(file, [...formatIssues(result.issues, herdConfigSchema), ...fleet]);
  const secrets = opts.secrets ?? "strict";
  // Secret files are found like dataDir: relative to the config file.
  const unreadable = secrets === "unchecked" ? [] : resolveSecrets(result.output, file ? dirname(file) : process.cwd());
  const problems = [...(secrets === "strict" ? unreadable : []), ...fleet, ...crossCheck(result.output)];
  if (problems.length) throw new ConfigError(file, problems);
  return result.output;
}

async function evaluate(files: ConfigFile[]): Promise<unknown> {
  const { path, text } = files[0]!;
  const ext = extname(path).toLowerCase();
  try {
    if (ext === ".json") return JSON.parse(text);
    if (ext === ".yaml" || ext === ".yml") return YAML.parse(text);
    if (isScript(path)) {
      const mod = await within(importGraph(files), EVALUATE_TIMEOUT_MS, () => {
        throw new Error(`it did not finish evaluating within ${EVALUATE_TIMEOUT_MS / 1000} s`);
      });
      if (mod.default === undefined) throw new Error("it has no default export; write `export default { … } satisfies HerdConfig`");
      return mod.default;
    }
  } catch (e) {
    throw new ConfigError(path, [firstLine((e as Error).message)]);
  }
  throw new ConfigError(path, [`unsupported file type "${ext}"; use .ts, .json or .yaml`]);
}

// A config that never finishes evaluating (a top-level await on something that hangs) must not stall reloads.
const EVALUATE_TIMEOUT_MS = 10_000;

/**
 * The rules across nodes, read from the raw input so they are reported with the shape errors, not after them
 * are fixed: unique node ids, Ollama addresses and MLX ports, pins only for declared nodes.
 */
function fleetProblems(raw: unknown): string[] {
  const problems: string[] = [];
  const input = (raw ?? {}) as { nodes?: unknown; pins?: unknown };
  const nodes = Array.isArray(input.nodes) ? (input.nodes as { id?: unknown; ollama?: unknown; mlx?: unknown }[]) : [];
  const seen = new Map<string, number>();
  const ollamas = new Map<string, number>();
  nodes.forEach((node, i) => {
    // Two entries for one Ollama are one Mac counted twice: its models listed twice, its slots doubled.
    const ollama = typeof node?.ollama === "string" && URL.canParse(node.ollama) ? new URL(node.ollama).origin : null;
    if (ollama !== null) {
      const twin = ollamas.get(ollama);
      if (twin !== undefined) problems.push(`nodes[${i}].ollama: ${ollama} is nodes[${twin}]'s Ollama too; one Mac is one node`);
      else ollamas.set(ollama, i);
    }
    const id = typeof node?.id === "string" ? node.id.trim() : null;
    if (id === null) return;
    const first = seen.get(id);
    if (first !== undefined) problems.push(`nodes[${i}].id: "${id}" is already used by nodes[${first}]; node ids must be unique`);
    else seen.set(id, i);
    const ports = new Map<unknown, number>();
    (Array.isArray(node.mlx) ? (node.mlx as { port?: unknown }[]) : []).forEach((server, j) => {
      if (typeof server?.port !== "number") return;
      const other = ports.get(server.port);
      if (other !== undefined) problems.push(`nodes[${i}].mlx[${j}].port: ${server.port} is already used by nodes[${i}].mlx[${other}]`);
      else ports.set(server.port, j);
    });
  });
  if (input.pins && typeof input.pins === "object") {
    for (const key of Object.keys(input.pins)) {
      if (key.trim() === EVERY_NODE || seen.has(key.trim())) continue;
      const hint = nearest(key, [...seen.keys()]);
      problems.push(`${formatPath(["pins", key])}: no node "${key}" is declared in nodes; ${hint ? `did you mean "${hint}"?` : `pin on a declared node, or "*" for every node`}`);
    }
  }
  return problems;
}

function crossCheck(config: Config): string[] {
  const problems: string[] = [];
  const hb = config.heartbeat;
  if (hb.timeoutMs <= hb.intervalMs) problems.push(`heartbeat.timeoutMs: ${hb.timeoutMs} must be greater than heartbeat.intervalMs (${hb.intervalMs})`);
  if (hb.offlineMs <= hb.timeoutMs) problems.push(`heartbeat.offlineMs: ${hb.offlineMs} must be greater than heartbeat.timeoutMs (${hb.timeoutMs})`);
  for (const [alias, target] of Object.entries(config.modelMap)) {
    if (target === alias) problems.push(`${formatPath(["modelMap", alias])}: maps to itself`);
  }
  problems.push(...authProblems(config));
  return problems;
}

// A relative dataDir is relative to the config file, so a config kept in git behaves the same from any cwd.
function resolvePaths(config: Config, file: string): Config {
  return { ...config, server: { ...config.server, dataDir: expandPath(config.server.dataDir, dirname(file)) } };
}

export function expandPath(p: string, base = process.cwd()): string {
  if (p === "~" || p.startsWith("~/")) return resolve(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(base, p);
}

function firstLine(s: string): string {
  return s.split("\n").find((l) => l.trim())?.trim() ?? s;
}
