// What the fleet holds right now, across its reachable nodes: the one place
// /api/tags, /api/ps, /api/show and /v1/models read it from. MLX servers'
// models are named "mlx:<repo id>", as their queues are; the native embedding
// servers' models are listed apart (their routing is backends/embedding.ts').
import type { MlxServerStatus } from "./heartbeat.ts";
import { type NodeRecord, onDisk, provenOnDisk, type Registry } from "./registry.ts";
import { modelKey, normalizeModelName } from "./model-name.ts";
import { GB, type TagEntry } from "./node-models.ts";

export const MLX_PREFIX = "mlx:";

export interface FleetModel {
  name: string;
  /** The first node's /api/tags entry for it, as that node reported it; an MLX server's: its name and size. */
  entry: TagEntry;
  nodes: string[];
  backend: "ollama" | "mlx";
}

export interface MlxServer extends MlxServerStatus {
  node: NodeRecord;
  /** Where the router reaches it; null when the node's address is unknown. */
  url: string | null;
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
      const name = normalizeModelName(m.name);
      const model = models.get(name) ?? { name, entry: m, nodes: [], backend: "ollama" as const };
      model.nodes.push(node.id);
      models.set(name, model);
    }
  }
  for (const server of residentMlx(registry)) {
    const name = MLX_PREFIX + server.model;
    const model = models.get(name) ?? { name, entry: { name, size: Math.round(server.model_size_gb * GB) }, nodes: [], backend: "mlx" as const };
    model.nodes.push(server.node.id);
    models.set(name, model);
  }
  return [...models.values()];
}

/** Some node holds `name` (on disk, whatever the node's state) or runs it on an MLX server: a name the fleet knows, not one a client made up. */
export function knownModel(registry: Registry, name: string): boolean {
  return registry.all().some((node) => onDisk(node, name) || node.report.mlx_servers?.some((s) => s.model === name || MLX_PREFIX + s.model === name));
}

/** Every MLX server the node agents report, whatever its state. */
export function mlxServers(registry: Registry): MlxServer[] {
  return registry.all().flatMap((node) => (node.report.mlx_servers ?? []).map((s) => ({ ...s, node, url: registry.serviceUrl(node, s.port) })));
}

/** The MLX servers serving now (healthy, on an online node): their models are always resident. */
export function residentMlx(registry: Registry): MlxServer[] {
  return mlxServers(registry).filter((s) => s.status === "healthy" && s.node.status === "online");
}

/**
 * The MLX model a request names: "mlx:<repo id>", or a repo id some node's MLX server runs that no trusted Ollama holds;
 * null for any other model. A name an Ollama holds names its model, so one node's MLX server never takes another's
 * models (a client asks for the server's as "mlx:<name>"); but an Ollama's list sent without a credential does not
 * take a server's name (the servers are the config's or proven: declared-services.ts).
 */
export function mlxModelOf(registry: Registry, name: string): string | null {
  if (name.startsWith(MLX_PREFIX)) return name.slice(MLX_PREFIX.length);
  // Asked for every request: the reports alone answer it, without building each server's URL.
  const runs = registry.all().some((node) => node.report.mlx_servers?.some((s) => s.model === name));
  return runs && !provenOnDisk(registry, name) ? name : null;
}

/** A node's native embedding servers: its text server ("native", fastembed) and its vision server. */
export type EmbeddingKind = "native" | "vision";

/** The native server of `kind` a node reports running: its port and models. */
export function embeddingServerOn(node: NodeRecord, kind: EmbeddingKind) {
  const r = node.report;
  const [server, port] = kind === "native" ? [r.text_embedding, r.text_embedding_port] : [r.vision_embedding, r.vision_embedding_port];
  return server && port ? { port, models: server.models_available } : null;
}

/**
 * The models the online nodes' native servers serve, each once, with the backend /api/embed sends them to (vision
 * models only while features.visionEmbedding lets it): the fleet's embedding models beside Ollama's, for /v1/models.
 */
export function nativeEmbeddingModels(registry: Registry, visionOn: boolean): { name: string; backend: EmbeddingKind }[] {
  const kinds: EmbeddingKind[] = visionOn ? ["native", "vision"] : ["native"];
  const found = new Map<string, { name: string; backend: EmbeddingKind }>();
  for (const node of registry.all().filter((n) => n.status === "online")) {
    for (const backend of kinds) for (const m of embeddingServerOn(node, backend)?.models ?? []) if (!found.has(modelKey(m.name))) found.set(modelKey(m.name), { name: m.name, backend });
  }
  return [...found.values()];
}
