// VRAM fallback: when every node that has the requested model would need a cold
// load that does not fit in its free memory, serve a model that is already
// loaded and can stand in for it (same category and capabilities) instead of
// stalling on evictions. Never when the client asked for exactly this model.
import type { Needs } from "../core/request.ts";
import { canSubstitute } from "../fleet/model-traits.ts";
import { sameModel } from "../fleet/model-name.ts";
import type { Eligible, NodeView } from "../fleet/scorer.ts";

/**
 * A loaded stand-in for `model`, or null when the model can be served (or nothing fits the bill). `allowed`: whether
 * the client's key may be served a stand-in (auth.clients[].models); the best one it may is chosen.
 */
export function vramSubstitute(model: string, eligible: readonly Eligible[], nodes: NodeView[], needs: Needs, allowed: (model: string) => boolean): string | null {
  if (!eligible.length) return null;
  const cannotFit = eligible.every((c) => {
    const free = c.node.memoryAvailableGb;
    return !c.loaded && free !== null && free !== undefined && free < c.modelSizeGb;
  });
  if (!cannotFit) return null;
  const standIns = nodes
    .filter((n) => n.online && !n.draining)
    .flatMap((n) => n.loaded)
    .filter((m) => !sameModel(m.name, model) && canSubstitute(model, m.name, needs) && allowed(m.name))
    .sort((a, b) => b.sizeGb - a.sizeGb || a.name.localeCompare(b.name));
  return standIns[0]?.name ?? null;
}
