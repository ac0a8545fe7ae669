// A pinned model is one the operator wants hot at all times; loaded nowhere,
// its first request pays a cold load (or fails).
import { loadedOn, onDisk } from "../../registry.ts";
import { fold, type HealthCheck, type NodeInput, type Problem } from "../types.ts";

export const priorityModels: HealthCheck = {
  id: "priority_models",
  name: "Pinned models",
  run({ nodes, pins }) {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const loadedSomewhere = (model: string) => nodes.some((n) => n.status === "online" && loadedOn(n, model));
    const problems: Problem[] = pins
      .filter((p) => !loadedSomewhere(p.model))
      .map((p): Problem => ({
        severity: "warning",
        node: p.node_id,
        finding: `pinned ${p.model} (on ${p.node_id}) is not loaded anywhere`,
        recommendation: why(byId.get(p.node_id), p.model),
        details: { model: p.model },
      }));
    return fold(problems, pins.length ? `all ${pins.length} pin(s) loaded` : "no pinned models");
  },
};

function why(node: NodeInput | undefined, model: string): string {
  if (!node || node.status !== "online") return `bring ${node?.id ?? "its node"} online; the preloader then loads ${model}.`;
  if (!onDisk(node, model)) return `pull ${model} onto ${node.id} (the preloader does not pull), or unpin it.`;
  return `the preloader could not load ${model} on ${node.id}: see the router's log (not enough memory?).`;
}
