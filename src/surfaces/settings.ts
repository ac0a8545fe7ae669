// GET /dashboard/api/settings: herd's whole config grouped by category (seed 000's
// categories and names where herd has the same setting, herd's own sections for
// the rest), secrets masked, the live config's source, and the nodes with their
// versions. POST flips the two runtime toggles, auto_pull and vram_fallback.
import { hostname } from "node:os";
import { Elysia } from "elysia";
import * as v from "valibot";
import { routeFacts } from "../auth/route-facts.ts";
import { maskSecrets } from "../config/credentials/secrets.ts";
import { type Config, herdConfigSchema } from "../config/schema.ts";
import type { LiveConfig } from "../config/live.ts";
import { effectiveView } from "../config/plan.ts";
import type { Registry } from "../fleet/registry.ts";
import { nodeRuns } from "../fleet/status.ts";
import { TOGGLE_NAMES, type Toggles, type ToggleValues } from "../router/toggles.ts";
import { VERSION } from "../version.ts";
import { validBody } from "./body.ts";

/** Seed 000's category and name for the settings herd shares with it; durations in seconds, as there. */
const SEED_NAMES: Record<string, { category: string; key: string; seconds?: true }> = {
  "server.host": { category: "server", key: "host" },
  "server.port": { category: "server", key: "port" },
  "server.dataDir": { category: "server", key: "data_dir" },
  "routing.maxRetries": { category: "server", key: "max_retries" },
  "heartbeat.intervalMs": { category: "heartbeat", key: "heartbeat_interval", seconds: true },
  "heartbeat.timeoutMs": { category: "heartbeat", key: "heartbeat_timeout", seconds: true },
  "heartbeat.offlineMs": { category: "heartbeat", key: "heartbeat_offline", seconds: true },
  "scoring.weights.hot": { category: "scoring", key: "score_model_hot" },
  "scoring.weights.warm": { category: "scoring", key: "score_model_warm" },
  "scoring.weights.cold": { category: "scoring", key: "score_model_cold" },
  "rebalancer.intervalMs": { category: "rebalancer", key: "rebalance_interval", seconds: true },
  "rebalancer.threshold": { category: "rebalancer", key: "rebalance_threshold" },
  "rebalancer.maxPerCycle": { category: "rebalancer", key: "rebalance_max_per_cycle" },
  "preWarm.threshold": { category: "pre_warm", key: "pre_warm_threshold" },
  "preWarm.minAvailability": { category: "pre_warm", key: "pre_warm_min_availability" },
  "timeouts.autoPullMs": { category: "auto_pull_config", key: "auto_pull_timeout", seconds: true },
  "features.contextProtection": { category: "context_protection", key: "context_protection" },
};
/** Shown under `toggles` with their runtime values instead. */
const TOGGLED = new Set(["features.autoPull", "features.vramFallback"]);
/** Shown as the `nodes` list, from what the nodes report. */
const NOT_SHOWN = new Set(["$schema", "nodes"]);

const flag = v.boolean("expected true or false");
const toggleBody = v.object({ auto_pull: v.optional(flag), vram_fallback: v.optional(flag) });

/** What the settings page shows and changes. */
interface Settings {
  live: LiveConfig;
  registry: Registry;
  toggles: Toggles;
}

export function settingsSurface(rt: Settings) {
  return new Elysia({ name: "settings" })
    .use(routeFacts)
    .get("/dashboard/api/settings", () => {
      const { path, hash, loaded_at, last_error } = rt.live.status();
      return {
        router_version: VERSION,
        router_hostname: hostname(),
        config: configView(rt.live.config, rt.toggles.current(rt.live.config)),
        config_source: { path, hash, loaded_at, last_error },
        nodes: nodes(rt),
      };
    }, { facts: { access: "client", body: "json", errors: "herd" } })
    // The running config as `herd plan` compares it: all of it, defaults filled in, secrets masked. Admin only,
    // as it names every node's address and every client key.
    .get("/fleet/config", () => {
      const { path, hash, last_error } = rt.live.status();
      return { router_version: VERSION, path, hash, last_error, config: effectiveView(rt.live.config) };
    }, { facts: { access: "admin", body: "json", errors: "herd" } })
    .use(settingsActions(rt));
}

/** POST /dashboard/api/settings: it changes how the router behaves, so it is its own plugin, easy to guard. */
export function settingsActions(rt: Settings) {
  return new Elysia({ name: "settings-actions" }).use(routeFacts).post(
    "/dashboard/api/settings",
    async ({ request }) => {
      const body = await validBody(request, toggleBody);
      if (body instanceof Response) return body;
      // Every other field is ignored, as in seed 000: only these two change at runtime.
      const updated: Partial<ToggleValues> = {};
      for (const name of TOGGLE_NAMES) if (body[name] !== undefined) updated[name] = body[name];
      rt.toggles.set(updated);
      return { status: "updated", updated };
    },
    { parse: "none", facts: { access: "admin", body: "json", errors: "herd" } },
  );
}

type Category = Record<string, unknown>;

function configView(config: Config, toggles: ToggleValues): Record<string, Category> {
  const view: Record<string, Category> = { toggles: { ...toggles } };
  for (const { category } of Object.values(SEED_NAMES)) view[category] ??= {};
  const put = (category: string, key: string, value: unknown) => ((view[category] ??= {})[key] = value);
  for (const [section, schema] of Object.entries(herdConfigSchema.entries)) {
    if (NOT_SHOWN.has(section)) continue;
    const value = (config as Record<string, unknown>)[section];
    const fields = objectFields(schema as SchemaNode);
    if (!fields) {
      // pins and modelMap: records keyed by the user's own names, shown as written.
      const shown = maskSecrets(schema, value ?? {}) as Record<string, unknown>;
      for (const [key, item] of Object.entries(shown)) put(snake(section), key, item);
      view[snake(section)] ??= {};
      continue;
    }
    for (const [path, leaf] of leaves(section, fields, value as Record<string, unknown>)) {
      if (TOGGLED.has(path)) continue;
      const seed = SEED_NAMES[path];
      if (seed) put(seed.category, seed.key, seed.seconds && typeof leaf === "number" ? leaf / 1000 : leaf);
      else put(snake(section), snake(path.slice(section.length + 1).replaceAll(".", "_")), leaf);
    }
  }
  return view;
}

interface SchemaNode {
  entries?: Record<string, SchemaNode>;
  wrapped?: SchemaNode;
}

/** The fields of an object schema (through its optional wrapper), or null for any other schema. */
function objectFields(schema: SchemaNode): Record<string, SchemaNode> | null {
  let s: SchemaNode | undefined = schema;
  while (s?.wrapped) s = s.wrapped;
  return s?.entries ?? null;
}

/** [dotted path, value] for every setting the schema knows in this section, unset ones as null. */
function leaves(prefix: string, fields: Record<string, SchemaNode>, value: Record<string, unknown> | undefined): [string, unknown][] {
  return Object.entries(fields).flatMap(([key, schema]): [string, unknown][] => {
    const path = `${prefix}.${key}`;
    const nested = objectFields(schema);
    const leaf = value?.[key];
    // Each setting is shown as its schema types it: a secret field, or one inside a list, as a mask.
    return nested ? leaves(path, nested, leaf as Record<string, unknown>) : [[path, maskSecrets(schema, leaf) ?? null]];
  });
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function nodes(rt: Settings) {
  // The agent inside `herd` reports as this machine's host name (without .local) unless told otherwise.
  const local = hostname().replace(/\.local$/, "");
  const routerHash = rt.live.current.source.hash;
  return rt.registry.all().map((n) => ({
    node_id: n.id,
    status: n.status,
    ...nodeRuns(n, routerHash),
    ip: rt.registry.shownOllamaUrl(n),
    models_loaded_count: n.ollama?.models_loaded.length ?? 0,
    is_router: n.id === local,
  }));
}
