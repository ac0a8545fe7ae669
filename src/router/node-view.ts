// A node as the scorer and the estimate read it (fleet/scorer.ts:NodeView), from the registry's record: built per
// request, so its model lists are viewed once per list the node reports, not once per request.
import { modelKey } from "../fleet/model-name.ts";
import { automaticContextShown } from "../fleet/ollama-releases.ts";
import { diskGb, isCloud } from "../fleet/node-models.ts";
import type { OllamaSection } from "../fleet/heartbeat.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import type { DiskModel, LoadedModel, NodeView } from "../fleet/scorer.ts";

export function nodeView(registry: Registry, node: NodeRecord): NodeView {
  const hardware = registry.hardware(node);
  const ollama = node.ollama;
  const loaded = loadedViews.of(ollama?.models_loaded ?? NONE, (m) => ({ name: m.name, sizeGb: m.size_gb, contextLength: m.context_length }));
  const available = availableViews.of(ollama?.models_available ?? NONE, (m) => ({ name: m.name, sizeGb: diskGb(m), remote: isCloud(m) }));
  return {
    id: node.id,
    online: registry.ollamaServing(node),
    draining: registry.isDraining(node),
    memoryTotalGb: hardware.memoryTotalGb,
    memoryAvailableGb: node.report.memory?.available_gb ?? null,
    bandwidthGbps: hardware.bandwidthGbps,
    onlineForS: node.onlineSince === null ? 0 : (Date.now() - node.onlineSince) / 1000,
    loaded: loaded.list,
    loadedByKey: loaded.byKey,
    available: available.list,
    availableByKey: available.byKey,
    loadedGb: loaded.totalGb,
    largestOnDiskGb: available.largestGb,
    memoryShownGb: Math.max(node.mostLoadedGb, automaticContextShown(node.mostContextShown)?.memoryGiB ?? 0),
    unloadedForRoom: node.unloadedForRoom,
    recentlyLoaded: [...node.unloadedAt.keys()],
    defaultContext: registry.defaultContext(node),
  };
}

const NONE: never[] = [];

/**
 * A node's model list as the scorer reads it, and by modelKey: built once per list, not per request. A heartbeat,
 * a poll or a pull replaces a node's list (never edits it), so the list itself is the cache key.
 */
class ModelViews<M, V extends { name: string; sizeGb: number }> {
  private readonly cache = new WeakMap<readonly M[], Views<V>>();

  of(models: readonly M[], view: (m: M) => V): Views<V> {
    let views = this.cache.get(models);
    if (!views) {
      const list = models.map(view);
      const byKey = new Map<string, V>();
      for (const v of list) if (!byKey.has(modelKey(v.name))) byKey.set(modelKey(v.name), v);
      views = { list, byKey, totalGb: list.reduce((sum, m) => sum + m.sizeGb, 0), largestGb: Math.max(0, ...list.map((m) => m.sizeGb)) };
      this.cache.set(models, views);
    }
    return views;
  }
}

interface Views<V> {
  list: V[];
  byKey: Map<string, V>;
  totalGb: number;
  largestGb: number;
}

const loadedViews = new ModelViews<OllamaSection["models_loaded"][number], LoadedModel>();
const availableViews = new ModelViews<OllamaSection["models_available"][number], DiskModel>();
