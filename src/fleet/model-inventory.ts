// What is on each node's disk and whether it earns its place: sizes, usage
// through the router, residency. A pure function of the fleet and the traces'
// usage, for the model management page (GET /dashboard/api/model-management).
import { describeModel } from "./model-catalog.ts";
import { sameModel } from "./model-name.ts";

/** A model unused this long (or never used through the router) is flagged as unused. */
const UNUSED_AFTER_DAYS = 7;
const DAY_S = 86_400;

export interface InventoryNode {
  node_id: string;
  models: { name: string; size_gb: number; parameter_size?: string; quantization?: string }[];
  loaded: string[];
  disk: { total_gb: number; available_gb: number } | null;
}

export interface ModelUsage {
  node_id: string;
  model: string;
  requests: number;
  /** Unix seconds. */
  last_used: number;
}

export function modelInventory(nodes: InventoryNode[], usage: ModelUsage[], now: number) {
  return {
    nodes: nodes.map((node) => {
      const models = node.models.map((m) => {
        // Traces may spell a name differently ("llama3.2" vs "llama3.2:latest"): sum every spelling.
        const used = usage.filter((u) => u.node_id === node.node_id && sameModel(u.model, m.name));
        const lastUsed = used.length ? Math.max(...used.map((u) => u.last_used)) : null;
        const daysUnused = lastUsed === null ? null : Math.round(((now - lastUsed) / DAY_S) * 10) / 10;
        return {
          name: m.name,
          ...describeModel(m.name),
          size_gb: m.size_gb,
          parameter_size: m.parameter_size ?? null,
          quantization: m.quantization ?? null,
          last_used: lastUsed,
          days_unused: daysUnused,
          total_requests: used.reduce((sum, u) => sum + u.requests, 0),
          loaded_in_vram: node.loaded.some((l) => sameModel(l, m.name)),
          unused: lastUsed === null || now - lastUsed >= UNUSED_AFTER_DAYS * DAY_S,
        };
      });
      // Loaded first, then the most recently used, then by name.
      models.sort(
        (a, b) => Number(b.loaded_in_vram) - Number(a.loaded_in_vram) || (b.last_used ?? -1) - (a.last_used ?? -1) || a.name.localeCompare(b.name),
      );
      return {
        node_id: node.node_id,
        models,
        total_size_gb: Math.round(models.reduce((sum, m) => sum + m.size_gb, 0) * 10) / 10,
        disk_available_gb: node.disk?.available_gb ?? null,
        disk_total_gb: node.disk?.total_gb ?? null,
      };
    }),
  };
}
