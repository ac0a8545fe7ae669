// Which nodes can serve a model right now, best first. A deliberately plain
// ordering (loaded before on disk, then the least busy); the scorer of issue #3
// replaces it with weights from the config.
import { sameModel } from "./model-name.ts";
import type { NodeRecord, Registry } from "./registry.ts";

export interface Candidate {
  node: NodeRecord;
  url: string;
  loaded: boolean;
}

export function candidatesFor(registry: Registry, model: string): Candidate[] {
  const out: Candidate[] = [];
  for (const node of registry.all()) {
    const url = registry.ollamaUrl(node);
    if (node.status !== "online" || !url || registry.isDraining(node) || !node.ollama?.reachable) continue;
    const loaded = node.ollama.models_loaded.some((m) => sameModel(m.name, model));
    const onDisk = node.ollama.models_available.some((m) => sameModel(typeof m === "string" ? m : m.name, model));
    if (loaded || onDisk) out.push({ node, url, loaded });
  }
  return out.sort((a, b) => Number(b.loaded) - Number(a.loaded) || a.node.ollama!.requests_active - b.node.ollama!.requests_active);
}
