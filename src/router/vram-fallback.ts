// VRAM fallback: when every node that has the requested model would need a cold
// load that does not fit in its free memory, or the model is bigger than each of
// them, serve a model that is already loaded and can stand in for it (same
// category and capabilities) instead of stalling on evictions or refusing. Never
// when the client asked for exactly this model.
import type { Needs } from "../core/request.ts";
import { canSubstitute } from "../fleet/model-traits.ts";
import { modelKey, sameModel } from "../fleet/model-name.ts";
import { biggerThan, type NodeView } from "../fleet/scorer.ts";

/**
 * A loaded stand-in for `model`, or null when the model can be served (or nothing fits the bill). `allowed`: whether
 * the client's key may be served a stand-in (auth.clients[].models); the best one it may is chosen.
 */
export function vramSubstitute(model: string, nodes: NodeView[], needs: Needs, allowed: (model: string) => boolean): string | null {
  const key = modelKey(model);
  const serving = nodes.filter((n) => n.online && !n.draining);
  const holders = serving.filter((n) => n.loadedByKey.has(key) || n.availableByKey.has(key));
  if (!holders.length) return null;
  const cannotFit = holders.every((n) => {
    if (n.loadedByKey.has(key)) return false;
    const sizeGb = n.availableByKey.get(key)!.sizeGb;
    return biggerThan(n, sizeGb) || (n.memoryAvailableGb !== null && n.memoryAvailableGb < sizeGb);
  });
  if (!cannotFit) return null;
  const standIns = serving
    .flatMap((n) => n.loaded)
    .filter((m) => !sameModel(m.name, model) && canSubstitute(model, m.name, needs) && allowed(m.name))
    .sort((a, b) => b.sizeGb - a.sizeGb || a.name.localeCompare(b.name));
  return standIns[0]?.name ?? null;
}
