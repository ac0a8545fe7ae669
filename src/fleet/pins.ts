// Pinned models: kept resident on their node, reloaded by the preloader when
// evicted. Two sources, merged per node: the config's `pins` (read-only here;
// "*" = every node) and pins set through the API, kept in SQLite so they
// survive restarts. Also the arithmetic that refuses pins a node cannot hold together.
import type { Database } from "bun:sqlite";
import type { LiveConfig } from "../config/live.ts";
import { EVERY_NODE } from "../config/schema.ts";
import { log } from "../log.ts";
import { normalizeModelName, sameModel } from "./model-name.ts";
import { diskGb } from "./node-models.ts";
import type { NodeRecord, Registry } from "./registry.ts";
import { OS_RESERVE_GB } from "./scorer.ts";

export interface Pin {
  model: string;
  source: "config" | "runtime";
}

/** Whether a node's pins fit in its memory together; sizes lists every pin with the one being added last. */
export interface CoResidence {
  fits: boolean;
  totalGb: number;
  capacityGb: number;
  neededGb: number;
  sizes: { model: string; size_gb: number }[];
}

export class Pins {
  constructor(
    private readonly store: Database,
    private readonly live: LiveConfig,
    private readonly registry: Registry,
  ) {}

  /** The config's pins for every node. */
  fleetWide(): string[] {
    return this.live.config.pins[EVERY_NODE] ?? [];
  }

  /** A node's pins: the config's first, then the API's oldest first, each model once. */
  on(nodeId: string): Pin[] {
    const pins: Pin[] = [];
    const add = (model: string, source: Pin["source"]) => {
      if (!pins.some((p) => sameModel(p.model, model))) pins.push({ model, source });
    };
    for (const model of [...this.fleetWide(), ...(this.live.config.pins[nodeId] ?? [])]) add(model, "config");
    for (const row of this.rows()) if (row.node_id === nodeId) add(row.model, "runtime");
    return pins;
  }

  /** node id → pinned models, for every node that has any (known or not: an agent may not have reported yet). */
  perNode(): Record<string, string[]> {
    const ids = new Set([...this.registry.all().map((n) => n.id), ...Object.keys(this.live.config.pins), ...this.rows().map((r) => r.node_id)]);
    ids.delete(EVERY_NODE);
    const entries = [...ids].sort().map((id) => [id, this.on(id).map((p) => p.model)] as const);
    return Object.fromEntries(entries.filter(([, models]) => models.length > 0));
  }

  /** Pins `model` on the node; false when it already was (by the config or the API). */
  add(nodeId: string, model: string): boolean {
    if (this.on(nodeId).some((p) => sameModel(p.model, model))) return false;
    this.store.run("INSERT INTO pins (node_id, model, pinned_at) VALUES (?, ?, ?)", [nodeId, normalizeModelName(model), Date.now() / 1000]);
    this.cached = null;
    log.info(`pinned ${model} on ${nodeId}`);
    return true;
  }

  /** Removes the API's pins of `model` (on one node, or everywhere); returns the nodes it was unpinned from. */
  remove(model: string, nodeId?: string): string[] {
    const gone = this.rows().filter((r) => sameModel(r.model, model) && (nodeId === undefined || r.node_id === nodeId));
    for (const r of gone) {
      this.store.run("DELETE FROM pins WHERE node_id = ? AND model = ?", [r.node_id, r.model]);
      this.cached = null;
      log.info(`unpinned ${r.model} from ${r.node_id}`);
    }
    return gone.map((r) => r.node_id);
  }

  /** Config keys ("*" or node ids) that pin `model` (on `nodeId` when given). */
  configured(model: string, nodeId?: string): string[] {
    return Object.entries(this.live.config.pins)
      .filter(([key, models]) => (nodeId === undefined || key === EVERY_NODE || key === nodeId) && models.some((m) => sameModel(m, model)))
      .map(([key]) => key);
  }

  /** Would `model` fit beside the node's other pins? null when nothing says the node's memory (an agentless node without `hardware.memoryGb`). */
  coResidence(node: NodeRecord, model: string): CoResidence | null {
    const totalGb = this.registry.hardware(node).memoryTotalGb;
    if (!totalGb) return null;
    const others = this.on(node.id).filter((p) => !sameModel(p.model, model));
    const sizes = [...others.map((p) => p.model), model].map((m) => ({ model: m, size_gb: sizeOn(node, m) }));
    const neededGb = round1(sizes.reduce((sum, s) => sum + s.size_gb, 0));
    const capacityGb = totalGb - OS_RESERVE_GB;
    return { fits: neededGb <= capacityGb, totalGb, capacityGb, neededGb, sizes };
  }

  // The API's pins, read from the store once: this class is their only writer, and /fleet/status,
  // the dashboard's stream and the preloader ask for them per node.
  private cached: { node_id: string; model: string }[] | null = null;

  private rows(): { node_id: string; model: string }[] {
    this.cached ??= this.store.query<{ node_id: string; model: string }, []>("SELECT node_id, model FROM pins ORDER BY pinned_at").all();
    return this.cached;
  }
}

/** The node's Ollama URL when it can take a load now, else null. */
export function loadableUrl(registry: Registry, node: NodeRecord): string | null {
  return node.status === "online" && node.ollama?.reachable ? registry.ollamaUrl(node) : null;
}


// What the model takes on the node: its resident size when loaded (weights and KV cache), else its size on disk.
function sizeOn(node: NodeRecord, model: string): number {
  const loaded = node.ollama?.models_loaded.find((m) => sameModel(m.name, model));
  if (loaded) return loaded.size_gb;
  const available = node.ollama?.models_available.find((m) => sameModel(m.name, model));
  return available ? diskGb(available) : 0;
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
