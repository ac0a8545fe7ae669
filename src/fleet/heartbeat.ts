// The heartbeat a node agent POSTs to /heartbeat (seed 000's wire format,
// snake_case). Unknown fields are kept out of state but never rejected, so a
// newer agent can talk to an older router; only a model's entry is kept whole
// (node-models.ts), for /api/tags and /api/ps.
import * as v from "valibot";
import { nodeId } from "../config/schema.ts";
import { modelList, nodeText, psEntry, tagEntry, versionText } from "./node-models.ts";

const upTo = (max: number) => v.pipe(v.number(), v.minValue(0), v.maxValue(max));
const gb = upTo(1_000_000);
const port = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535));
/** More than a Mac runs; each server's entry is small. */
const MAX_SERVERS = 64;
const MAX_LABELS = 32;

// Seed 000's agents list the models on disk by name; herd's send each /api/tags entry whole. Either way the
// router holds an entry (a name alone is an entry with nothing else known).
const availableModel = v.pipe(
  v.union([v.string(), v.looseObject({})]),
  v.transform((m) => (typeof m === "string" ? { name: m } : m)),
  tagEntry,
);

const ollamaSection = v.object({
  models_loaded: v.optional(modelList(psEntry), []),
  models_available: v.optional(modelList(availableModel), []),
  requests_active: v.optional(upTo(1_000_000), 0),
  reachable: v.optional(v.boolean(), true),
  error: v.optional(v.nullable(nodeText(2000)), null),
  version: v.optional(v.nullable(versionText), null),
});

/** How long an MLX server's status_reason may be (the agent keeps its own within it). */
export const MAX_STATUS_REASON = 2000;
/** How long an agent's config error may be: its refused reload's message, as the router's own last_error says one. */
export const MAX_CONFIG_ERROR = 2000;
/** The longest trained context a heartbeat may report (16M tokens; today's longest are 10M). */
export const MAX_CONTEXT_LENGTH = 2 ** 24;

// Every field bounded, every string one line of printable text (nodeText): a heartbeat is untrusted input.
const mlxServer = v.object({
  port: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535)),
  model: nodeText(1024),
  // starting: its process runs, not listening yet; loading: listening, its model not in (mlx-lm 0.31.3 and later).
  status: v.picklist(["healthy", "starting", "loading", "unhealthy", "memory_blocked", "quarantined", "stopped"]),
  status_reason: v.optional(nodeText(MAX_STATUS_REASON), ""),
  kv_bits: v.optional(upTo(64), 0),
  model_size_gb: v.optional(upTo(1_000_000), 0),
  last_ok_ts: v.optional(v.nullable(upTo(1e11)), null),
  /** The model's trained context (its config.json), which a reply the client did not cap may fill; null: unknown. */
  context_length: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_CONTEXT_LENGTH))), null),
});

const embeddingStatus = v.object({ backend_available: v.boolean(), cached_model_count: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000)) });

// dimensions: the vectors' length, where the agent knows it; cached: the model's weights are on the node's disk.
const embeddingModel = v.object({
  name: nodeText(512),
  dimensions: v.optional(v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(1), v.maxValue(65536))),
  cached: v.optional(v.boolean()),
});

const embeddingServer = v.object({
  models_available: v.optional(modelList(embeddingModel), []),
  processing: v.optional(v.boolean(), false),
});

/** macOS's thermal states (NSProcessInfoThermalState, in its order); "serious" and "critical" mean throttling. */
export const THERMAL_STATES = ["nominal", "fair", "serious", "critical"] as const;
export type ThermalState = (typeof THERMAL_STATES)[number];
/** What is known of a machine's heat: the state macOS gives, or why there is none. */
export type ThermalReading = { state: ThermalState } | { state: "unknown"; reason: string };
/** How long the agent's reason for an unknown thermal state may be. */
export const MAX_THERMAL_REASON = 300;

// A disk the node keeps models on, once per filesystem: what it holds ("ollama", "huggingface"; a newer agent may name
// more, so any short name passes) and the folder measured.
const diskVolume = v.object({
  holds: v.pipe(v.array(nodeText(64)), v.maxLength(8)),
  path: nodeText(1024),
  total_gb: gb,
  available_gb: gb,
});

export const heartbeatSchema = v.object({
  node_id: v.pipe(v.string(), v.nonEmpty("node_id is required"), nodeId),
  agent_version: v.optional(nodeText(64)),
  /** The hash of the config the agent runs (its file and every file it imports): rollouts compare it with the router's. */
  config_hash: v.optional(nodeText(128)),
  /** Why the agent's last reload of its copy of the config was refused (it still runs config_hash); null: none was. */
  config_error: v.optional(v.nullable(nodeText(MAX_CONFIG_ERROR))),
  ollama_url: v.optional(nodeText(2048)),
  draining: v.optional(v.boolean()),
  /** The agent is stopping: the router forgets what it reported now, not when its beats time out. */
  goodbye: v.optional(v.literal(true)),
  cpu: v.optional(v.object({ cores_physical: upTo(100_000), utilization_pct: upTo(100) })),
  memory: v.optional(
    v.object({ total_gb: gb, used_gb: gb, available_gb: gb, pressure: v.picklist(["nominal", "warning", "critical"]) }),
  ),
  /** Seed 000's disk: the volume of Ollama's models (herd's data directory's before disk_volumes). */
  disk: v.optional(v.object({ total_gb: gb, available_gb: gb })),
  /** Every volume holding the node's models, one per filesystem. */
  disk_volumes: v.optional(v.pipe(v.array(diskVolume), v.maxLength(8))),
  hardware: v.optional(
    v.object({
      memory_total_gb: gb,
      cores_physical: upTo(100_000),
      chip: nodeText(128),
      memory_bandwidth_gbps: upTo(1_000_000),
      arch: nodeText(64),
    }),
  ),
  ollama: v.optional(ollamaSection),
  mlx_servers: v.optional(v.pipe(v.array(mlxServer), v.maxLength(MAX_SERVERS))),
  mlx_bind_host: v.optional(nodeText(256)),
  /** macOS's thermal state, where the agent read one. */
  thermal: v.optional(v.object({ state: v.picklist(THERMAL_STATES) })),
  // Why the agent has no thermal state (not macOS, the FFI failed); null: it has one. A field of its own, not a fifth
  // state, because a router that knows only the four refuses the whole heartbeat over an unknown picklist value.
  thermal_unknown: v.optional(v.nullable(nodeText(MAX_THERMAL_REASON))),
  // Embedding backends beside Ollama (seed 000). null means none / not running, and clears an earlier report
  // (the router merges reports); an agent that leaves them out does not know about them.
  vision_embedding_status: v.optional(v.nullable(embeddingStatus)),
  text_embedding: v.optional(v.nullable(embeddingServer)),
  text_embedding_port: v.optional(v.nullable(port)),
  text_embedding_status: v.optional(v.nullable(embeddingStatus)),
  // The vision server's models and port, as Ollama Herd's agents send them (models/node.py), and herd's own
  // words for the image and transcription services the agent runs (an Ollama Herd agent's are translated to
  // them, fleet/ollama-herd.ts). null clears an earlier report, as above.
  vision_embedding: v.optional(v.nullable(embeddingServer)),
  vision_embedding_port: v.optional(v.nullable(port)),
  image_models: v.optional(v.nullable(modelList(v.object({ name: nodeText(512), backend: nodeText(64) })))),
  image_port: v.optional(v.nullable(port)),
  transcription_models: v.optional(v.nullable(modelList(v.object({ name: nodeText(512) })))),
  transcription_port: v.optional(v.nullable(port)),
  labels: v.optional(v.pipe(v.record(nodeText(64), nodeText(256)), v.check((l) => Object.keys(l).length <= MAX_LABELS, `at most ${MAX_LABELS} labels`))),
});

export type Heartbeat = v.InferOutput<typeof heartbeatSchema>;
export type DiskVolume = v.InferOutput<typeof diskVolume>;
export type OllamaSection = v.InferOutput<typeof ollamaSection>;
export type MlxServerStatus = v.InferOutput<typeof mlxServer>;

/**
 * A node's thermal state as its last reports say: "unknown" with the agent's reason while it has none (an earlier
 * report's state, kept by the merge of reports, no longer counts); null when its agent never said (or polled).
 */
export function thermalOf(report: Pick<Heartbeat, "thermal" | "thermal_unknown">): ThermalReading | null {
  if (typeof report.thermal_unknown === "string") return { state: "unknown", reason: report.thermal_unknown };
  return report.thermal ? { state: report.thermal.state } : null;
}
