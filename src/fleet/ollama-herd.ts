// An Ollama Herd agent's heartbeat in herd's words, so a fleet moves to herd a Mac at a time. Its
// wire is Ollama Herd's HeartbeatPayload (models/node.py of geeks-accelerator/ollama-herd at
// 32cfc92, sent whole by node/agent.py); it is told from herd's own by `ollama_host`, Ollama Herd's
// name for the node's Ollama URL (herd's agent says `ollama_url`). Only what differs is renamed
// here: the heartbeat schema then bounds every field as it does any agent's.
import { MLX_PREFIX } from "./catalog.ts";
import type { NodeRecord } from "./registry.ts";

/** What a translated heartbeat's agent_version starts with: /fleet/status shows it, the backends read it. */
const AGENT = "ollama-herd";

/** Ollama Herd's MemoryPressure values (models/node.py) in herd's words. */
const PRESSURE: Record<string, string> = { normal: "nominal", warn: "warning", critical: "critical" };

/**
 * Ollama Herd's ThermalState: "unknown" on every Mac (common/system_metrics.py reads no sensor there) is no
 * report at all; its "warning" (a hot sensor, Linux only) is herd's mildest state above nominal.
 */
const THERMAL: Record<string, string | undefined> = { nominal: "nominal", warning: "fair" };


/** The heartbeat as herd's schema reads it: an Ollama Herd agent's translated, any other as it came. */
export function fromOllamaHerd(body: Record<string, unknown>): Record<string, unknown> {
  if (typeof body.ollama_host !== "string") return body;
  const { ollama_host, agent_version, memory, thermal, ollama, image, image_port, transcription, transcription_port, vision_embedding, vision_embedding_port, vision_embedding_status, chip, memory_bandwidth_gbps, arch, ...rest } = body;
  const mem = record(memory);
  const port = (p: unknown) => (typeof p === "number" && p > 0 ? p : null);
  // Its agent reports a service's models whenever their CLI or weights are there, and the port only once it started the server.
  const served = <T>(section: unknown, at: unknown, entry: (m: Record<string, unknown>) => T) =>
    port(at) && Array.isArray(record(section)?.models_available) ? (record(section)!.models_available as unknown[]).map((m) => entry(record(m) ?? {})) : null;
  const image_models = served(image, image_port, (m) => ({ name: m.name, backend: /(^|\/)diffusionkit-cli$/.test(String(m.binary)) ? "diffusionkit" : "mflux" }));
  const transcription_models = served(transcription, transcription_port, (m) => ({ name: m.name }));
  // It lists only the models whose weights are on disk (node/collector.py).
  const vision = served(vision_embedding, vision_embedding_port, (m) => ({ name: m.name, dimensions: m.dimensions, cached: true }));
  const state = THERMAL[String(record(thermal)?.state)];
  const cpu = record(body.cpu);
  // Its chip and bandwidth are "" and 0 where it does not know them (models/node.py).
  const known = typeof chip === "string" && chip !== "" && typeof memory_bandwidth_gbps === "number" && memory_bandwidth_gbps > 0;
  const ol = record(ollama);
  return {
    ...rest,
    ollama_url: ollama_host,
    agent_version: `${AGENT} ${typeof agent_version === "string" && agent_version ? agent_version : "?"}`,
    ...(mem ? { memory: { ...mem, pressure: PRESSURE[String(mem.pressure)] ?? mem.pressure } } : {}),
    ...(state ? { thermal: { state } } : {}),
    // Its collector lists each healthy MLX server's model among Ollama's as mlx:… (node/mlx_client.py); herd has them from mlx_servers.
    ...(ol ? { ollama: { ...ol, models_available: Array.isArray(ol.models_available) ? ol.models_available.filter((m) => !String(m).startsWith(MLX_PREFIX)) : ol.models_available } } : {}),
    ...(known && mem && cpu ? { hardware: { memory_total_gb: mem.total_gb, cores_physical: cpu.cores_physical, chip, memory_bandwidth_gbps, arch } } : {}),
    image_models,
    image_port: image_models ? port(image_port) : null,
    transcription_models,
    transcription_port: transcription_models ? port(transcription_port) : null,
    vision_embedding: vision ? { models_available: vision, processing: false } : null,
    vision_embedding_port: vision ? port(vision_embedding_port) : null,
    // An agent before 0.6.1 sends {} (models/node.py): it does not know.
    ...(record(vision_embedding_status) && Object.keys(record(vision_embedding_status)!).length ? { vision_embedding_status } : {}),
  };
}

/** The node's agent is Ollama Herd's: its services speak Ollama Herd's wire, not herd's. */
export function ollamaHerdAgent(node: NodeRecord): boolean {
  return node.report.agent_version?.startsWith(`${AGENT} `) ?? false;
}

function record(x: unknown): Record<string, unknown> | null {
  return typeof x === "object" && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>) : null;
}
