// What applying a proposed config would change on a running router (`herd plan`), from the two configs'
// effective views (every default filled in, secrets masked): nodes and client keys by name, every other
// setting by its path. A secret shows only as set or not, so a plan never holds one.
import { maskSecrets } from "./credentials/secrets.ts";
import { formatPath } from "./problems.ts";
import { type Config, herdConfigSchema } from "./schema.ts";

export interface Change {
  kind: "+" | "-" | "~";
  /** `nodes: mini`, `scoring.weights.hot`, `auth.clients: alice`. */
  what: string;
  /** The fields of a node or key that differ, or `old → new` for a setting. */
  detail: string;
}

/** A config as JSON with its secrets masked and its addresses without credentials: what the router shows of its running config. */
export function effectiveView(config: Config): Record<string, unknown> {
  return maskSecrets(herdConfigSchema, config) as Record<string, unknown>;
}

// Not compared: each machine resolves a relative dataDir to its own folder, flags and env override the
// listen address, and all three need a restart anyway.
const NOT_COMPARED = new Set(["$schema", "server.host", "server.port", "server.dataDir"]);

/** The changes from `running` to `proposed`, both effective views: nodes, then client keys, then settings. */
export function configChanges(running: Record<string, unknown>, proposed: Record<string, unknown>): Change[] {
  const [before, after] = [parts(running), parts(proposed)];
  return [
    ...byName("nodes", "id", before.nodes, after.nodes),
    ...byName("auth.clients", "name", before.clients, after.clients),
    ...settings(before.settings, after.settings),
  ];
}

function parts(view: Record<string, unknown>) {
  const { nodes, auth, ...rest } = view;
  const { clients, ...authRest } = (auth ?? {}) as Record<string, unknown>;
  return { nodes, clients, settings: flatten({ ...rest, auth: authRest }) };
}

/** A list of entries keyed by `key`: added, removed, and changed with the names of the fields that differ. */
function byName(what: string, key: string, before: unknown, after: unknown): Change[] {
  const index = (list: unknown) => new Map(((Array.isArray(list) ? list : []) as Record<string, unknown>[]).map((e) => [String(e[key]), e]));
  const [old, next] = [index(before), index(after)];
  const changes: Change[] = [];
  for (const [name, entry] of next) {
    const was = old.get(name);
    if (!was) changes.push({ kind: "+", what: `${what}: ${name}`, detail: "" });
    else {
      const fields = [...new Set([...Object.keys(was), ...Object.keys(entry)])].filter((f) => JSON.stringify(was[f]) !== JSON.stringify(entry[f]));
      if (fields.length) changes.push({ kind: "~", what: `${what}: ${name}`, detail: fields.join(", ") });
    }
  }
  for (const name of old.keys()) if (!next.has(name)) changes.push({ kind: "-", what: `${what}: ${name}`, detail: "" });
  return changes;
}

function settings(before: Map<string, string>, after: Map<string, string>): Change[] {
  const changes: Change[] = [];
  for (const [path, value] of after) {
    const was = before.get(path);
    if (was === undefined) changes.push({ kind: "+", what: path, detail: value });
    else if (was !== value) changes.push({ kind: "~", what: path, detail: `${was} → ${value}` });
  }
  for (const [path, value] of before) if (!after.has(path)) changes.push({ kind: "-", what: path, detail: value });
  return changes.filter((c) => !NOT_COMPARED.has(c.what));
}

/** Every leaf setting by its path, as JSON; a list is one setting. */
function flatten(value: unknown, keys: (string | number)[] = [], into = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, [...keys, k], into);
  } else if (value !== undefined) into.set(formatPath(keys), JSON.stringify(value));
  return into;
}
