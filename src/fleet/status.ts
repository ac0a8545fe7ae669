// GET /fleet/status, /fleet/queue and /fleet/limits: the fleet in seed 000's shapes, plus herd's config block.
import type { ConfigStatus, LiveConfig } from "../config/live.ts";
import type { Config, NodeEntry } from "../config/schema.ts";
import { bandwidthForChip } from "../core/chips.ts";
import { MLX_PREFIX } from "./catalog.ts";
import { type OllamaSection, thermalOf } from "./heartbeat.ts";
import { toGb } from "./node-models.ts";
import type { Queues } from "./queues.ts";
import type { RepairStats } from "./repair-stats.ts";
import type { Pins } from "./pins.ts";
import type { NodeRecord, Registry } from "./registry.ts";
import type { Speeds } from "./speeds.ts";
import { VERSION } from "../version.ts";

function nodeJson(registry: Registry, queues: Queues, pins: Pins, speeds: Speeds, routerHash: string, node: NodeRecord) {
  const entry = registry.entry(node.id);
  const r = node.report;
  const loaded = node.ollama?.models_loaded ?? [];
  // What the router itself has in flight on the node: exact, unlike a backend's own count.
  const active = queues.nodeLoad(node.id).inFlight;
  return {
    node_id: node.id,
    status: node.status,
    status_reason: node.status === "online" ? "" : node.statusReason || (node.lastSeen === null ? "not reached yet" : ""),
    source: node.source,
    declared: entry !== undefined,
    draining: registry.isDraining(node),
    excluded: registry.exclusion(node),
    labels: { ...r.labels, ...entry?.labels },
    ...nodeRuns(node, routerHash),
    last_seen: node.lastSeen === null ? null : node.lastSeen / 1000,
    hardware: r.hardware ?? declaredHardware(entry?.hardware),
    sources: figureSources(node, entry),
    ollama_url: registry.shownOllamaUrl(node),
    cpu: r.cpu ?? null,
    memory: r.memory ?? null,
    disk: r.disk ?? null,
    disk_volumes: r.disk_volumes ?? null,
    thermal: thermalOf(r),
    ollama: node.ollama && ollamaJson(node.ollama, active),
    models_loaded_count: loaded.length,
    free_slots: freeSlots(registry, node, active),
    mlx_servers: r.mlx_servers ?? [],
    pinned: pins.on(node.id).map((p) => p.model),
    capacity: capacityJson(registry, speeds, node.id),
    speeds: speedsJson(speeds, node.id),
    ...(r.mlx_bind_host ? { mlx_bind_host: r.mlx_bind_host } : {}),
    ...embeddingJson(r),
  };
}

/** Seed 000's embedding servers beside Ollama, as the agent last reported them (null: none running); absent from agents that never say. */
function embeddingJson(r: NodeRecord["report"]) {
  const fields = ["vision_embedding_status", "text_embedding", "text_embedding_port", "text_embedding_status"] as const;
  return Object.fromEntries(fields.filter((f) => r[f] !== undefined).map((f) => [f, r[f]]));
}

/**
 * Which herd version and config (by hash) a node's agent says it runs, and whether either differs from the
 * router's: a rollout is done when no node drifts. An agentless node, or an agent too old to say, drifts never.
 * `config_error`: why the agent refused its copy's last reload, which it would otherwise run.
 */
export function nodeRuns(node: NodeRecord, routerHash: string) {
  const agent_version = node.report.agent_version ?? null;
  const config_hash = node.report.config_hash ?? null;
  return {
    agent_version,
    config_hash,
    config_error: node.report.config_error ?? null,
    version_drift: agent_version !== null && agent_version !== VERSION,
    config_drift: config_hash !== null && config_hash !== routerHash,
  };
}

/**
 * Where each figure of the node's view came from: its agent's heartbeat, the config (`nodes[].hardware`), or the
 * router's own poll of its Ollama; null where nothing says. An agent's report goes when the poll takes over from it.
 */
function figureSources(node: NodeRecord, entry: NodeEntry | undefined) {
  const r = node.report;
  const agent = (figure: unknown) => (figure ? ("agent" as const) : null);
  return {
    hardware: r.hardware ? ("agent" as const) : entry?.hardware ? ("config" as const) : null,
    memory: agent(r.memory),
    cpu: agent(r.cpu),
    disk: agent(r.disk),
    ollama: node.ollama ? node.source : null,
  };
}

/** A config's `nodes[].hardware` in the shape of an agent's report, so a reader finds it where it looks for hardware. */
function declaredHardware(h: NodeEntry["hardware"]) {
  if (!h) return null;
  const bandwidth = h.bandwidthGbps ?? (h.chip ? bandwidthForChip(h.chip) : undefined);
  return { memory_total_gb: h.memoryGb ?? null, chip: h.chip ?? null, memory_bandwidth_gbps: bandwidth ?? null, source: "config" };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * Seed 000's optional `capacity`: how fast herd has found the node, per GB of model (decode ≈ its effective memory
 * bandwidth), the requests it runs at once per model, and the context its Ollama loads a model with when asked none;
 * `sources` says where each came from (parallel: `config`, `learned` from its answers, or the `prior`, its release's
 * default; default_context: `config`, its `release` and memory, `shown` by its loaded models' contexts, or `assumed`, the smallest,
 * when herd cannot place them).
 */
function capacityJson(registry: Registry, speeds: Speeds, nodeId: string) {
  const f = speeds.factor(nodeId);
  const node = registry.get(nodeId);
  const context = node && registry.defaultContextOf(node);
  return {
    decode_gb_per_s: round1(f.decodeBytesPerS / 1e9),
    prefill_gb_per_s: round1(f.prefillBytesPerS / 1e9),
    load_gb_per_s: round1(f.loadBytesPerS / 1e9),
    parallel: registry.parallel(nodeId),
    default_context: context?.numCtx ?? null,
    sources: { ...f.sources, parallel: registry.parallelSource(nodeId), default_context: context?.source ?? null },
  };
}

/** What herd learned of each model on the node (null: not yet). */
function speedsJson(speeds: Speeds, nodeId: string) {
  const rate = (n: number | null) => (n === null ? null : round1(n));
  return Object.fromEntries(
    speeds.learned(nodeId).map((s) => [
      s.model,
      {
        decode_tps: rate(s.decodeTps),
        prefill_tps: rate(s.prefillTps),
        load_ms: s.loadMs === null ? null : Math.round(s.loadMs),
        size_gb: s.sizeBytes ? toGb(s.sizeBytes) : null,
        samples: { decode: s.decodeSamples, prefill: s.prefillSamples, load: s.loadSamples },
        updated_at: s.updatedAt / 1000,
      },
    ]),
  );
}

/** Seed 000's shape: the models on disk by name; herd adds each one's /api/tags entry as the node reported it. */
function ollamaJson({ models_available, ...ollama }: OllamaSection, requestsActive: number) {
  return { ...ollama, requests_active: requestsActive, models_available: models_available.map((m) => m.name), models_available_details: models_available };
}

/** Requests the node could start now: its slots per loaded model (at least one model's) less what herd runs there. */
function freeSlots(registry: Registry, node: NodeRecord, inFlight: number): number {
  return Math.max(0, registry.parallel(node.id) * Math.max(1, node.ollama?.models_loaded.length ?? 0) - inFlight);
}

/** What the fleet's status views read (GET /fleet/status, the dashboard's live feed). */
export interface FleetState {
  registry: Registry;
  queues: Queues;
  pins: Pins;
  speeds: Speeds;
  live: LiveConfig;
}

export function fleetStatus(registry: Registry, queues: Queues, pins: Pins, speeds: Speeds, config: ConfigStatus) {
  const nodes = registry.all().map((n) => nodeJson(registry, queues, pins, speeds, config.hash, n));
  const online = nodes.filter((n) => n.status === "online");
  return {
    fleet: {
      nodes_total: nodes.length,
      nodes_online: online.length,
      models_loaded: online.reduce((sum, n) => sum + n.models_loaded_count, 0),
      requests_active: online.reduce((sum, n) => sum + (n.ollama?.requests_active ?? 0), 0),
    },
    nodes,
    queues: queueMap(queues),
    config,
    timestamp: Date.now() / 1000,
  };
}

function queueMap(queues: Queues) {
  return Object.fromEntries(queues.entries().map(({ key, usage, max_queue_depth, ...q }) => [key, { ...q, ...mlxFields({ ...q, usage, max_queue_depth }) }]));
}

type QueueEntry = ReturnType<Queues["entries"]>[number];

/** Seed 000's extra fields on an MLX server's queue: its admission cap, and prompt-cache and token averages since start. */
function mlxFields(q: Omit<QueueEntry, "key">) {
  if (!q.model.startsWith(MLX_PREFIX)) return {};
  const u = q.usage;
  const ratio = (part: number, whole: number) => (whole ? Math.round((part / whole) * 1000) / 1000 : 0);
  const mean = (total: number) => (u.samples ? Math.round((total / u.samples) * 10) / 10 : 0);
  return {
    max_queue_depth: q.max_queue_depth,
    cache_hit_rate: ratio(u.cachedTokens, u.promptTokens),
    warm_hit_rate: ratio(u.warmCachedTokens, u.warmPromptTokens),
    cold_request_pct: ratio(u.coldRequests, u.samples),
    avg_latency_ms: mean(u.latencyMs),
    avg_prompt_tokens: mean(u.promptTokens),
    avg_completion_tokens: mean(u.completionTokens),
    stats_samples: u.samples,
  };
}

/**
 * GET /fleet/queue: light enough to poll often, for client-side backoff. Seed 000's "Ollama and MLX queue entries only":
 * the queues herd holds to a node's slots; a node service's jobs (images, transcriptions, native embeddings: queues it
 * does not cap, router/attempt.ts:UNCAPPED) are in /fleet/status and /metrics.
 */
export function fleetQueue(registry: Registry, queues: Queues, repairs: RepairStats) {
  const entries = queues.entries().filter((q) => Number.isFinite(q.concurrency));
  const pending = entries.reduce((n, q) => n + q.pending, 0);
  const inFlight = entries.reduce((n, q) => n + q.in_flight, 0);
  return {
    queue_depth: pending + inFlight,
    pending,
    in_flight: inFlight,
    completed: entries.reduce((n, q) => n + q.completed, 0),
    failed: entries.reduce((n, q) => n + q.failed, 0),
    // The longest wait a queued request faces now: a cautious client backs off by this much.
    estimated_wait_ms: Math.round(Math.max(0, ...entries.map((q) => (q.pending * queues.view(q.node_id, q.model).avgLatencyMs) / Math.max(1, q.concurrency)))),
    nodes_online: registry.all().filter((n) => n.status === "online").length,
    queues: Object.fromEntries(
      entries.map((q) => {
        // An MLX server's entry has seed 000's counters from the start; an Ollama model's, from its first repair.
        const toolRepair = repairs.of(q.model) ?? (q.model.startsWith(MLX_PREFIX) ? NO_REPAIRS : undefined);
        const entry = { pending: q.pending, in_flight: q.in_flight, concurrency: q.concurrency, model: q.model, node_id: q.node_id, ...mlxFields(q) };
        return [q.key, { ...entry, ...(toolRepair ? { tool_repair: toolRepair } : {}) }];
      }),
    ),
    timestamp: Date.now() / 1000,
  };
}

const NO_REPAIRS = { attempts: 0, successes: 0, failures: 0 };

/** GET /fleet/limits: what the fleet can absorb, so a client can serialise instead of collecting 429s. */
export function fleetLimits(registry: Registry, queues: Queues, config: Config) {
  return {
    hot_model_cap: config.preloader.maxCount,
    max_retries: config.routing.maxRetries,
    client_max_in_flight: config.routing.clientMaxInFlight,
    client_retry_after_s: config.routing.clientRetryAfterSeconds,
    mlx: { max_in_flight_per_model: config.mlx.maxInFlightPerModel, max_queue_depth: config.mlx.maxQueueDepth, retry_after_s: config.mlx.retryAfterSeconds },
    nodes: Object.fromEntries(
      registry.all().map((node) => {
        const load = queues.nodeLoad(node.id);
        return [node.id, { status: node.status, parallel: registry.parallel(node.id), free_slots: freeSlots(registry, node, load.inFlight), in_flight: load.inFlight, pending: load.pending }];
      }),
    ),
    timestamp: Date.now() / 1000,
  };
}
