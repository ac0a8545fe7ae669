// The public shape of herd.config.ts. This file is self-contained on purpose:
// `herd init` writes it verbatim next to a user's config as `herd.d.ts`, so an
// editor gets completions with nothing but the herd binary installed.
// Durations are milliseconds and say so in their names (`…Ms`).

/** The whole fleet in one file: the router reads all of it, each node agent its own entry. */
export interface HerdConfig {
  /** Path or URL of the JSON Schema (for .json / .yaml configs); ignored by herd. */
  $schema?: string;
  server?: ServerConfig;
  /** Every machine of the fleet. The same file is deployed to every Mac. */
  nodes?: NodeConfig[];
  /** Models kept resident: node id → models; the key "*" pins on every node. */
  pins?: Record<string, string[]>;
  /** Model aliases, first match wins: a glob ("claude-sonnet-*") → a model herd serves. */
  modelMap?: Record<string, string>;
  scoring?: ScoringConfig;
  heartbeat?: HeartbeatConfig;
  routing?: RoutingConfig;
  timeouts?: TimeoutsConfig;
  features?: FeaturesConfig;
  anthropic?: AnthropicConfig;
  mlx?: MlxRoutingConfig;
  preloader?: PreloaderConfig;
  rebalancer?: RebalancerConfig;
  preWarm?: PreWarmConfig;
  telemetry?: TelemetryConfig;
}

export interface ServerConfig {
  /** Address the router listens on. Default "0.0.0.0" (reachable on the LAN). */
  host?: string;
  /** Default 11435. */
  port?: number;
  /** Where herd keeps its SQLite store and state files. "~" is expanded. Default "~/.herd". */
  dataDir?: string;
}

export interface NodeConfig {
  /** Unique node id; a node agent finds its entry by it (`herd node --node-id`, default the host name). */
  id: string;
  /** Ollama's base URL as the router reaches it, e.g. "http://10.0.0.2:11434". */
  ollama?: string;
  /** mlx_lm.server processes the node agent runs on this node. */
  mlx?: MlxServerConfig[];
  /** Free-form labels shown in status and usable by routing rules. */
  labels?: Record<string, string>;
  /** Concurrent requests per loaded model (Ollama's OLLAMA_NUM_PARALLEL). Default 4. */
  parallel?: number;
  /** Take the node out of rotation without removing it: in-flight work finishes. */
  draining?: boolean;
  /** Address the node's MLX servers bind to: "127.0.0.1" (local only) or "0.0.0.0". */
  mlxBindHost?: string;
  /** Free memory an MLX server must leave after loading its weights. Default 10. */
  mlxMemoryHeadroomGb?: number;
  /** The command that starts an MLX server. Default ["mlx_lm.server"]. */
  mlxCommand?: string[];
}

export interface MlxServerConfig {
  /** Hugging Face repo id or local path, e.g. "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit". */
  model: string;
  port: number;
  /** KV-cache quantisation: 0 (off), 4 or 8. Default 0. */
  kvBits?: 0 | 4 | 8;
  promptCacheSize?: number;
  promptCacheBytes?: number;
  draftModel?: string;
}

export interface ScoringConfig {
  /** Each signal's largest contribution to a node's score; negative values are penalties. */
  weights?: ScoringWeights;
  /** Score role affinity by memory bandwidth rather than memory size. Default true. */
  bandwidthAware?: boolean;
  /** Treat a queue on a fast node as proportionally shorter. Default true. */
  normalizeQueueByBandwidth?: boolean;
  /** Penalty per queued request, up to weights.queueDepth. Default 6. */
  queuePenaltyPerRequest?: number;
  /** Models at least this big prefer the biggest machines. Default 20. */
  largeModelGb?: number;
  /** Models at most this big prefer the smallest machines. Default 8. */
  smallModelGb?: number;
}

export interface ScoringWeights {
  hot?: number;
  warm?: number;
  cold?: number;
  memoryFit?: number;
  queueDepth?: number;
  waitTime?: number;
  roleAffinity?: number;
  availability?: number;
  contextFit?: number;
}

export interface HeartbeatConfig {
  /** How often agents send heartbeats and the router polls agentless nodes. Default 5000. */
  intervalMs?: number;
  /** Silence after which a node is "degraded". Default 15000. */
  timeoutMs?: number;
  /** Silence after which a node is "offline" and gets no traffic. Default 30000. */
  offlineMs?: number;
}

export interface RoutingConfig {
  /**
   * How to order the nodes that can serve a request. "score" (default) weighs the signals in
   * `scoring`; "round-robin" and "least-connections" ignore them and exist for comparison.
   */
  strategy?: "score" | "round-robin" | "least-connections";
  /** Other nodes tried when one fails before its first byte. Default 2. */
  maxRetries?: number;
  /** Requests one client may have in flight; 0 = unlimited. Default 0. */
  clientMaxInFlight?: number;
  /** Retry-After (seconds) sent with a 429 from that cap. Default 2. */
  clientRetryAfterSeconds?: number;
}

export interface TimeoutsConfig {
  /** Connecting to a node. Default 5000. */
  connectMs?: number;
  /** From dispatch to the first byte (includes a cold model load). Default 300000. */
  firstByteMs?: number;
  /** Longest silence inside a stream. Default 120000. */
  idleMs?: number;
  /** An automatic pull of a missing model. Default 300000. */
  autoPullMs?: number;
  /** An in-flight request older than this is reaped as a zombie. Default 600000. */
  staleRequestMs?: number;
  imageMs?: number;
  transcriptionMs?: number;
  embeddingMs?: number;
}

export interface FeaturesConfig {
  /** Pull a missing model onto the best node instead of answering 404. Default true. */
  autoPull?: boolean;
  /** Serve a loaded model of the same category instead of a cold load that cannot fit. Default true. */
  vramFallback?: boolean;
  /** What to do with a client's num_ctx: "strip" (default), "warn" or "passthrough". */
  contextProtection?: "strip" | "warn" | "passthrough";
  imageGeneration?: boolean;
  transcription?: boolean;
  visionEmbedding?: boolean;
}

export interface AnthropicConfig {
  /** Route claude-* ids without a modelMap entry to the best loaded model of their tier. Default true. */
  autoRoute?: boolean;
  /** Refuse (413) prompts still larger than this after context management. Default 180000. */
  maxPromptTokens?: number;
  /** max_tokens when a request leaves it out. Default 4096. */
  defaultMaxTokens?: number;
  /** Model for requests that carry images, whatever the tier maps to. */
  visionModel?: string;
  /** When set, /v1/messages requires this key in `x-api-key` (or `Authorization: Bearer`). */
  apiKey?: string;
}

export interface MlxRoutingConfig {
  /** Requests queued per MLX server before 503 + Retry-After. Default 10. */
  maxQueueDepth?: number;
  /** Requests an MLX server runs at once. Default 1. */
  maxInFlightPerModel?: number;
  /** Admission to last byte; past it the request ends with 413 and a /compact hint. Default 300000. */
  wallClockTimeoutMs?: number;
  /** Retry-After (seconds) on an MLX 503. Default 10. */
  retryAfterSeconds?: number;
}

export interface PreloaderConfig {
  enabled?: boolean;
  /** Models the preloader keeps loaded per node (Ollama on macOS caps at 3). Default 3. */
  maxCount?: number;
}

export interface RebalancerConfig {
  intervalMs?: number;
  threshold?: number;
  maxPerCycle?: number;
}

export interface PreWarmConfig {
  threshold?: number;
  minAvailability?: number;
}

export interface TelemetryConfig {
  /** Send a daily usage roll-up to a connected platform. Default false. */
  localSummary?: boolean;
  /** Include per-tag counts in that roll-up. Default false. */
  includeTags?: boolean;
}
