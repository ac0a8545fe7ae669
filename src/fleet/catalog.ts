// What the fleet holds right now, across its reachable nodes: the one place
// /api/tags, /api/ps, /api/show and /v1/models read it from.
import type { NodeRecord, Registry } from "./registry.ts";
import { normalizeModelName } from "./model-name.ts";

export interface FleetModel {
  name: string;
  sizeGb: number;
  nodes: string[];
}

/** Online nodes whose Ollama answered the last report. */
export function reachableNodes(registry: Registry): NodeRecord[] {
  return registry.all().filter((n) => n.status === "online" && n.ollama?.reachable);
}

/** Every model on disk somewhere, once, with the nodes that have it. */
export function modelsOnDisk(registry: Registry): FleetModel[] {
  const models = new Map<string, FleetModel>();
  for (const node of reachableNodes(registry)) {
    for (const m of node.ollama!.models_available) {
      const name = normalizeModelName(typeof m === "string" ? m : m.name);
      const entry = models.get(name) ?? { name, sizeGb: typeof m === "string" ? 0 : m.size_gb, nodes: [] };
      entry.nodes.push(node.id);
      models.set(name, entry);
    }
  }
  return [...models.values()];
}
