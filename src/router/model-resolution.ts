// Which local model serves a model id that coding agents send (claude-sonnet-4-5,
// gpt-5-codex, …). In order: the config's modelMap, a real local model of that
// name, then auto-routing to the best model the fleet has loaded for the id's
// tier; else nothing (the surface answers 404). The reason goes in the trace.
// A strict request (X-Fleet-No-Fallback, "fallback": false) gets the modelMap
// entry the operator wrote or the very name it sent, never a substitute.
import type { Config } from "../config/schema.ts";
import { mlxModelOf } from "../fleet/catalog.ts";
import { type Category, modelTraits } from "../fleet/model-traits.ts";
import { normalizeModelName } from "../fleet/model-name.ts";
import { diskGb } from "../fleet/node-models.ts";
import { onDisk, type Registry } from "../fleet/registry.ts";
import { resolveAlias } from "./aliases.ts";
import type { KeyGrant } from "../core/client-key.ts";

export type Tier = "small" | "coding" | "large";

export interface Resolution {
  model: string;
  reason: string;
}

/** claude-*-haiku → small, sonnet → coding, opus → large; other agent ids (gpt-5-codex, …) → coding. */
function tierOf(id: string): Tier {
  const lower = id.toLowerCase();
  if (lower.includes("haiku") || lower.includes("mini") || lower.includes("nano")) return "small";
  if (lower.includes("opus")) return "large";
  return "coding";
}

/** `grant`: the client key's; auto-routing picks only among the models it may be served (admission checks the rest). */
export function resolveModel(registry: Registry, config: Config, requested: string, needs: { vision: boolean; tools?: boolean }, strict: boolean, grant: KeyGrant | null): Resolution | null {
  const mapped = resolveAlias(requested, config.modelMap);
  if (mapped !== requested) return { model: mapped, reason: `modelMap maps "${requested}" to "${mapped}"` };
  if (mlxModelOf(registry, requested)) return { model: requested, reason: "an MLX server's model" };
  // Dispatch answers 404 (or 503) when no node can serve the name itself.
  if (strict) return { model: normalizeModelName(requested), reason: "exactly as named (strict: no substitution)" };
  if (needs.vision && config.anthropic.visionModel) return { model: config.anthropic.visionModel, reason: "the request carries images: anthropic.visionModel" };
  const online = registry.all().filter((n) => n.status === "online" && n.ollama?.reachable && !registry.isDraining(n));
  if (online.some((n) => onDisk(n, requested))) return { model: normalizeModelName(requested), reason: "a local model of that name" };
  if (!config.anthropic.autoRoute) return null;

  const tier = tierOf(requested);
  const pick = (loadedOnly: boolean, nodes = online) => {
    const models = new Map<string, number>();
    for (const n of nodes) {
      const list = loadedOnly ? n.ollama!.models_loaded : n.ollama!.models_available.map((m) => ({ name: m.name, size_gb: diskGb(m) }));
      for (const m of list) models.set(m.name, Math.max(models.get(m.name) ?? 0, m.size_gb));
    }
    const ranked = [...models]
      .map(([name, sizeGb]) => ({ name, sizeGb, traits: modelTraits(name) }))
      .filter((m) => m.traits.category !== "embedding" && (!needs.vision || m.traits.vision) && (grant?.mayServe(m.name) ?? true))
      .sort(
        (a, b) =>
          // A request with tools wants a model that can call them (an image request may have no such vision model: then any).
          Number(Boolean(needs.tools) && !a.traits.tools) - Number(Boolean(needs.tools) && !b.traits.tools) ||
          preference(tier, a.traits.category) - preference(tier, b.traits.category) ||
          (tier === "small" ? a.sizeGb - b.sizeGb : b.sizeGb - a.sizeGb) ||
          a.name.localeCompare(b.name),
      );
    return ranked[0]?.name;
  };
  const loaded = pick(true);
  if (loaded) return { model: loaded, reason: `auto-routed (${tier} tier${needs.vision ? ", needs vision" : ""}) to the best loaded model` };
  const onDiskModel = pick(false);
  if (onDiskModel) return { model: onDiskModel, reason: `auto-routed (${tier} tier) to the best model on disk; none was loaded` };
  // No node that holds one can serve now (its Ollama down, or it offline): the model is named all the same, so the
  // client hears a 503 it may retry, not a 404 that says the model does not exist.
  const down = registry.all().filter((n) => n.ollama && !online.includes(n) && !registry.isDraining(n));
  const waiting = pick(false, down);
  return waiting ? { model: waiting, reason: `auto-routed (${tier} tier) to the best model of a node that cannot serve now` } : null;
}

// Lower is better: a coding agent wants a coder, then a general or reasoning model.
function preference(tier: Tier, category: Category): number {
  const order: Record<Tier, Category[]> = {
    small: ["general", "coding", "reasoning", "vision"],
    coding: ["coding", "reasoning", "general", "vision"],
    large: ["reasoning", "coding", "general", "vision"],
  };
  const i = order[tier].indexOf(category);
  return i < 0 ? 99 : i;
}
