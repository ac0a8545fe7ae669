// GET /fleet/status: the whole fleet in seed 000's shape, plus herd's config block.
import type { ConfigStatus } from "../config/live.ts";
import type { NodeRecord, Registry } from "./registry.ts";

export function nodeJson(registry: Registry, node: NodeRecord) {
  const entry = registry.entry(node.id);
  const r = node.report;
  const loaded = node.ollama?.models_loaded ?? [];
  const active = node.ollama?.requests_active ?? 0;
  const parallel = entry?.parallel ?? 4;
  return {
    node_id: node.id,
    status: node.status,
    status_reason: node.status === "online" ? "" : node.statusReason || (node.lastSeen === null ? "not reached yet" : ""),
    source: node.source,
    declared: entry !== undefined,
    draining: registry.isDraining(node),
    labels: { ...r.labels, ...entry?.labels },
    agent_version: r.agent_version ?? null,
    last_seen: node.lastSeen === null ? null : node.lastSeen / 1000,
    hardware: r.hardware ?? null,
    ollama_url: registry.ollamaUrl(node),
    cpu: r.cpu ?? null,
    memory: r.memory ?? null,
    disk: r.disk ?? null,
    ollama: node.ollama,
    models_loaded_count: loaded.length,
    free_slots: Math.max(0, parallel * Math.max(1, loaded.length) - active),
    mlx_servers: r.mlx_servers ?? [],
    ...(r.mlx_bind_host ? { mlx_bind_host: r.mlx_bind_host } : {}),
  };
}

export function fleetStatus(registry: Registry, config: ConfigStatus) {
  const nodes = registry.all().map((n) => nodeJson(registry, n));
  const online = nodes.filter((n) => n.status === "online");
  return {
    fleet: {
      nodes_total: nodes.length,
      nodes_online: online.length,
      models_loaded: online.reduce((sum, n) => sum + n.models_loaded_count, 0),
      requests_active: online.reduce((sum, n) => sum + (n.ollama?.requests_active ?? 0), 0),
    },
    nodes,
    queues: {},
    config,
    timestamp: Date.now() / 1000,
  };
}
