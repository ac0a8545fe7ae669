// Builders for the unit tests beside the fleet and router modules (not a test
// file itself): a scorer's NodeView literal, a validated config with its
// defaults, a Registry fed real heartbeats, and Pins over an in-memory store,
// so a test states only what its behaviour depends on. Nothing here starts a
// process or opens a socket.
import { Database } from "bun:sqlite";
import * as v from "valibot";
import { LiveConfig } from "../config/live.ts";
import { parseConfig } from "../config/load.ts";
import { type Config, EVERY_NODE } from "../config/schema.ts";
import { log } from "../log.ts";
import { migrations } from "../store/migrations.ts";
import { heartbeatSchema } from "./heartbeat.ts";
import { modelKey } from "./model-name.ts";
import { GB } from "./node-models.ts";
import { Pins } from "./pins.ts";
import { Registry } from "./registry.ts";
import type { NodeView } from "./scorer.ts";

/** A config with every default filled in, as the router runs it; `raw` is written as in herd.config.ts. */
export function testConfig(raw: Record<string, unknown> = {}): Config {
  return parseConfig(raw);
}

/**
 * A node as the scorer sees it: online, undrained, 64 GB with 48 GB free, settled (online for an hour),
 * bandwidth unknown, no models; `over` sets the rest. The by-key maps follow the lists, as dispatch builds them.
 */
export function nodeView(id: string, over: Partial<Omit<NodeView, "id" | "loadedByKey" | "availableByKey" | "loadedGb" | "largestOnDiskGb">> = {}): NodeView {
  const loaded = over.loaded ?? [];
  const available = over.available ?? [];
  return {
    id,
    online: true,
    draining: false,
    memoryTotalGb: 64,
    memoryAvailableGb: 48,
    bandwidthGbps: null,
    onlineForS: 3600,
    recentlyLoaded: [],
    defaultContext: 4096,
    unloadedForRoom: false,
    ...over,
    loaded,
    available,
    loadedByKey: byKey(loaded),
    availableByKey: byKey(available),
    loadedGb: loaded.reduce((sum, m) => sum + m.sizeGb, 0),
    largestOnDiskGb: Math.max(0, ...available.map((m) => m.sizeGb)),
    memoryShownGb: over.memoryShownGb ?? loaded.reduce((sum, m) => sum + m.sizeGb, 0),
  };
}

function byKey<M extends { name: string }>(models: M[]): Map<string, M> {
  const map = new Map<string, M>();
  for (const m of models) if (!map.has(modelKey(m.name))) map.set(modelKey(m.name), m);
  return map;
}

/** One node of a test fleet, as its agent would report it. */
export interface NodeSpec {
  id: string;
  /** Model → GB it takes in memory. A loaded model is on disk too, as in Ollama's /api/tags. */
  loaded?: Record<string, number>;
  /** Model → GB on disk, not loaded. */
  onDisk?: Record<string, number>;
  memory?: { totalGb: number; availableGb: number };
  /** The models its MLX servers serve (healthy). */
  mlx?: string[];
  /** Declared draining in the config. */
  draining?: boolean;
  /** Declared concurrency per model (the config's `parallel`). */
  parallel?: number;
  /** Its agent stopped reporting long enough ago for the node to be offline. */
  offline?: boolean;
  /** Its agent reports, but cannot reach its Ollama. */
  ollamaDown?: boolean;
  /** Declared in the config (nodes[].hardware). */
  hardware?: { memoryGb: number };
}

/** The clock reading a test fleet's online nodes last reported at (ms epoch). */
const FLEET_NOW = 1_000_000_000;

/**
 * A Registry holding `nodes`, each declared in the config and heartbeating with what its spec says; `raw` is
 * the rest of the config. Offline nodes reported once, long before FLEET_NOW; the registry's clock stays there.
 * Each node's Ollama is at http://<id>.test:11434.
 */
export function testFleet(nodes: NodeSpec[], raw: Record<string, unknown> = {}): { registry: Registry; config: Config } {
  const declared = nodes.map((n) => ({ id: n.id, draining: n.draining ?? false, ...(n.parallel ? { parallel: n.parallel } : {}), ...(n.hardware ? { hardware: n.hardware } : {}) }));
  const config = testConfig({ ...raw, nodes: declared });
  let now = 0;
  const registry = new Registry(config, null, () => now);
  quietly(() => {
    // The ones that went silent report first, at 0: by FLEET_NOW they are long past heartbeat.offlineMs.
    for (const n of [...nodes].sort((a, b) => Number(Boolean(b.offline)) - Number(Boolean(a.offline)))) {
      now = n.offline ? 0 : FLEET_NOW;
      registry.heartbeat(heartbeat(n), null, true);
    }
    now = FLEET_NOW;
    registry.tick();
  });
  return { registry, config };
}

function heartbeat(n: NodeSpec) {
  const loaded = Object.entries(n.loaded ?? {});
  const onDisk = [...loaded, ...Object.entries(n.onDisk ?? {})];
  return v.parse(heartbeatSchema, {
    node_id: n.id,
    ollama_url: `http://${n.id}.test:11434`,
    ...(n.memory ? { memory: { total_gb: n.memory.totalGb, used_gb: n.memory.totalGb - n.memory.availableGb, available_gb: n.memory.availableGb, pressure: "nominal" } } : {}),
    ollama: {
      reachable: !n.ollamaDown,
      models_loaded: loaded.map(([name, sizeGb]) => ({ name, size_gb: sizeGb })),
      models_available: onDisk.map(([name, sizeGb]) => ({ name, size: sizeGb * GB })),
    },
    ...(n.mlx ? { mlx_servers: n.mlx.map((model, i) => ({ port: 8080 + i, model, status: "healthy" })) } : {}),
  });
}

/**
 * The router's pins over `registry`: the config's `pins` as written in herd.config.ts (`config` is the rest
 * of it), and the API's in an in-memory store with the pins table as its migration creates it.
 */
export async function testPins(registry: Registry, pins: Record<string, string[]>, config: Record<string, unknown> = {}): Promise<{ pins: Pins; live: LiveConfig; store: Database }> {
  // A config pins only on nodes it declares: each pinned node is declared unless `config` lists its own.
  const nodes = config.nodes ?? Object.keys(pins).filter((id) => id !== EVERY_NODE).map((id) => ({ id }));
  const live = await LiveConfig.open(null, () => testConfig({ ...config, nodes, pins }));
  const store = new Database(":memory:");
  store.run(migrations.find((m) => m.name === "pins")!.sql);
  return { pins: new Pins(store, live, registry), live, store };
}

/** Runs `build` with the router's info and warning lines silenced (a test fleet joining is no news); `said` collects them. */
export function quietly<T>(build: () => T, said?: string[]): T {
  const saved = { ...log };
  const note = (line: string) => void said?.push(line);
  Object.assign(log, { debug: () => {}, info: note, warn: note });
  try {
    return build();
  } finally {
    Object.assign(log, saved);
  }
}
