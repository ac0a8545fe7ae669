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
  /** Who may use the herd: node enrollment, client API keys, the admin credential. See docs/security.md. */
  auth?: AuthConfig;
  /** Models kept resident: the id of a node in `nodes` → models; the key "*" pins on every node. */
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
  /** The coordination platform a node may connect to (POST /api/platform/connect). */
  platform?: PlatformConfig;
  telemetry?: TelemetryConfig;
  /** What the SQLite store keeps. */
  store?: StoreConfig;
  /** The agent fleet: coding-agent workers in tmux panes that use this herd's models. See docs/agents.md. */
  agents?: AgentsConfig;
}

export interface ServerConfig {
  /**
   * Address the router listens on. Default "127.0.0.1": this machine only, as Ollama does. A fleet's router sets "0.0.0.0"
   * so other Macs' agents and clients reach it, which opens it to everyone on the network until `auth` is set.
   */
  host?: string;
  /** Default 11435. */
  port?: number;
  /** Where herd keeps its SQLite store and state files. "~" is expanded. Default "~/.herd". */
  dataDir?: string;
  /** On SIGTERM / SIGINT, how long answers in flight may take to finish before they are cut with an error. Default 10000. */
  shutdownGraceMs?: number;
  /** Largest request body of the JSON routes (chat, embeddings, herd's own APIs), in MB. Default 16. */
  maxBodyMb?: number;
  /** Largest request body of the routes that take images or audio (transcription), in MB. Default 64. */
  maxMediaBodyMb?: number;
  /** Requests one client address may have sending their bodies at once; past it, a 429 and the connection closed. Default 32. */
  clientMaxPendingBodies?: number;
  /**
   * Connections one client address may hold: past that many waiting for an answer at once, a new connection's request
   * gets a 429 and is closed; past that many open, a new one is answered and then closed rather than kept alive. Default 64.
   */
  clientMaxConnections?: number;
  /** How long a client's connection may sit idle between requests before herd closes it, in ms (5000–255000). Default 10000. */
  keepAliveMs?: number;
  /** Longest line a node may stream (an NDJSON or SSE line), in MB; past it the answer ends with an error. Default 16. */
  maxNodeLineMb?: number;
  /**
   * Largest whole answer herd reads from a node, in MB: a chat or generate answer not streamed (whatever the client
   * asked), embeddings, an image, a transcript, and what herd asks a node itself (its models, a model's facts); past it
   * the request ends with a 502 naming this setting and the node's connection is dropped. Default 64.
   */
  maxNodeAnswerMb?: number;
  /** Idle this long after a burst that grew memory, herd gives the memory back (Bun.shrink; the next requests compile their code again); 0: never. Default 60000. */
  idleShrinkMs?: number;
}

export interface StoreConfig {
  /** Request traces: kept by age and by size, pruned in the background; each pruned day is kept summed, so the dashboard's totals survive. */
  traces?: {
    /** Traces older than this many days are pruned; 0 keeps them whatever their age. Default 30. */
    maxAgeDays?: number;
    /** The oldest traces are pruned while the store's data is over this many MB (the daily roll-ups may take a quarter of it); 0: no cap. Default 1024. */
    maxMb?: number;
    /** Distinct tags a UTC day keeps (key: tags aside); a new tag past it is kept as "other". 0: no cap. Default 1000. */
    maxTagsPerDay?: number;
  };
}

/**
 * A secret: the value itself, `{ env: "VAR" }` (read from the environment) or `{ file: "path" }`
 * (read from a file; relative to the config file, "~" expanded). Surrounding whitespace is ignored.
 * A variable that is not set or a file that cannot be read is a config error naming the field.
 */
export type SecretValue = string | { env: string } | { file: string };

export interface AuthConfig {
  /** The node credential every agent may use: sent as `Authorization: Bearer` on each heartbeat. */
  nodeToken?: SecretValue;
  /**
   * Guards every change to the fleet: pull, delete, pins, settings, benchmarks.
   * Without it, only requests from the router's own machine (loopback) may change the fleet.
   */
  adminToken?: SecretValue;
  /** API keys for clients. With none, anyone who can reach the router may use it, as with Ollama. */
  clients?: ClientKeyConfig[];
}

export interface ClientKeyConfig {
  /** Unique; shown in traces as the tag "key:<name>". */
  name: string;
  /** Sent as `Authorization: Bearer <key>`, or `x-api-key` on the Anthropic surface. */
  key: SecretValue;
  /** Requests this key may start per minute (inference, count_tokens, /api/show); over it: 429 with Retry-After. */
  rateLimit?: { requestsPerMinute: number };
  /** Inference requests this key may have in flight at once; over it: 429. */
  maxInFlight?: number;
  /** Models this key may be served: names or globs ("qwen3:*"). Default: every model. */
  models?: string[];
  /**
   * What the key may do beyond running models. "pull": its requests may auto-pull a model no node has (features.autoPull);
   * "metrics": it may read GET /metrics. Default: none.
   */
  permissions?: ("pull" | "metrics")[];
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
  /** Concurrent requests per loaded model (the node's OLLAMA_NUM_PARALLEL). Undeclared: learned from the node's answers, starting from its Ollama release's default (1 since 0.9.7). */
  parallel?: number;
  /**
   * The node's OLLAMA_CONTEXT_LENGTH, when its operator set one. Undeclared: herd takes the context its Ollama release
   * picks (4096, 32768 or 262144 by the Mac's memory since 0.15.5), capped at each model's trained context.
   */
  contextLength?: number;
  /** Take the node out of rotation without removing it: in-flight work finishes. */
  draining?: boolean;
  /** Address the node's MLX servers bind to: "127.0.0.1" (local only) or "0.0.0.0". */
  mlxBindHost?: string;
  /** Free memory an MLX server must leave after loading its weights. Default 10. */
  mlxMemoryHeadroomGb?: number;
  /** The command that starts an MLX server. Default ["mlx_lm.server"]. */
  mlxCommand?: string[];
  /** Image generation on this node: the agent runs mflux or DiffusionKit for each request. */
  images?: ImagesConfig;
  /** Speech-to-text on this node: the agent runs Qwen3-ASR for each request. */
  transcription?: TranscriptionConfig;
  /** Native embedding servers on this node (you run them; the agent checks them and reports them). */
  embedding?: EmbeddingConfig;
  /** This node's own credential for its heartbeats; accepted besides auth.nodeToken. */
  token?: SecretValue;
  /** What you know of an agentless node's machine: routing uses it where an agent would report it (an agent's report wins). */
  hardware?: NodeHardwareConfig;
}

export interface NodeHardwareConfig {
  /** Its unified memory, in GB: models bigger than it leaves room for are not sent there. */
  memoryGb?: number;
  /** Its Apple chip, e.g. "M2 Max" or "M4 Pro": gives its memory bandwidth when bandwidthGbps is not set. */
  chip?: string;
  /** Its peak memory bandwidth in GB/s: the first guess of its decode speed until herd has learned it. */
  bandwidthGbps?: number;
}

export interface ImagesConfig {
  /** Port of the agent's image service. Default 11436. */
  port?: number;
  /** Address it listens on: "127.0.0.1" (default: the router runs on this Mac) or "0.0.0.0". */
  host?: string;
  /** The image models this node offers. */
  models: ImageModelConfig[];
}

export interface ImageModelConfig {
  /** The name clients ask for, e.g. "z-image-turbo". */
  name: string;
  /** The CLI that generates it: "mflux" (default) or "diffusionkit". */
  backend?: "mflux" | "diffusionkit";
  /** The command to run. Default ["mflux-generate"] or ["diffusionkit-cli"]. */
  command?: string[];
  /** What the CLI's --model (mflux) or --model-version (DiffusionKit) gets. Default: name. */
  model?: string;
  /** Inference steps when a request leaves them out. Default: the CLI's own. */
  steps?: number;
  /** mflux weight quantisation when a request leaves it out: 3, 4, 5, 6 or 8. */
  quantize?: 3 | 4 | 5 | 6 | 8;
}

export interface TranscriptionConfig {
  /** Port of the agent's transcription service. Default 11437. */
  port?: number;
  /** Address it listens on: "127.0.0.1" (default) or "0.0.0.0". */
  host?: string;
  /** The Qwen3-ASR CLI, run as `COMMAND AUDIO --model M --output-format json --output-dir DIR`. Default ["mlx-qwen3-asr"]. */
  command?: string[];
  /** The models this node offers. Default [{ name: "qwen3-asr", model: "Qwen/Qwen3-ASR-0.6B" }]. */
  models?: TranscriptionModelConfig[];
}

export interface TranscriptionModelConfig {
  /** The name clients ask for, e.g. "qwen3-asr". */
  name: string;
  /** What the CLI's --model gets. Default: name. */
  model?: string;
}

export interface EmbeddingConfig {
  /** The native text embedding server (fastembed). */
  text?: EmbeddingServerConfig;
  /** The native vision embedding server (ONNX: DINOv2, SigLIP, CLIP). */
  vision?: EmbeddingServerConfig;
}

export interface EmbeddingServerConfig {
  /** Its port on this node. Default 11439 (text) or 11438 (vision). */
  port?: number;
  /** The models it serves. Default ["nomic-embed-text"] (text) or ["dinov2-vit-s14", "clip", "siglip"] (vision). */
  models?: string[];
}

export interface MlxServerConfig {
  /** Hugging Face repo id or local path, e.g. "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit". */
  model: string;
  port: number;
  /** KV-cache quantisation: 0 (off), 4 or 8, as --kv-bits: only a patched mlx_lm.server takes it (stock mlx-lm has no such flag, and herd leaves it out). Default 0. */
  kvBits?: 0 | 4 | 8;
  /** --prompt-cache-size (mlx-lm 0.31.0 and later; left out for an older server). */
  promptCacheSize?: number;
  /** --prompt-cache-bytes (mlx-lm 0.31.0 and later; left out for an older server). */
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
   * How to order the nodes that can serve a request. "finish-time" (default) picks the node where it
   * is expected to finish soonest, from the speeds herd learned of each node; "score" weighs the
   * signals in `scoring`; "round-robin" and "least-connections" ignore them and exist for comparison.
   */
  strategy?: "finish-time" | "score" | "round-robin" | "least-connections";
  /**
   * With "finish-time": a later turn of a session (an agent's conversation) counts the prompt its last turn's node
   * likely still holds in its KV cache as nearly free to prefill there, so it stays on that node unless the wait
   * there costs more than the prefill saved. Default true.
   */
  sessionAffinity?: boolean;
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
  /** A client sending its request body, from the first read to the last byte; past it, a 408 and the connection closed. Default 60000. */
  requestBodyMs?: number;
  /** From dispatch to the first byte (includes a cold model load), once per request over every node tried. Default 300000. */
  firstByteMs?: number;
  /** Longest a stream may go without a whole line (bytes dripped without one are no progress). Default 120000. */
  idleMs?: number;
  /** A chat or generate request, admission to last byte; past it the answer ends with an error and its slot is freed. Default 900000. */
  generationMs?: number;
  /** Longest a streaming client may leave the answer unread; past it the stream is cut and its slot freed. Default 30000. */
  clientReadMs?: number;
  /** An automatic pull of a missing model. Default 300000. */
  autoPullMs?: number;
  /** An in-flight request older than this is a zombie on the health page (a warning; the deadlines are what free its slot). Default 600000. */
  staleRequestMs?: number;
  /** One image generation, queue on the node included. Default 120000. */
  imageMs?: number;
  /** One transcription. Default 300000. */
  transcriptionMs?: number;
  /** An embedding request, admission to answer (Ollama's, or one call to a native embedding server, whose first may download its model). Default 120000. */
  embeddingMs?: number;
}

export interface FeaturesConfig {
  /** Pull a missing model onto the best node instead of answering 404. Default true. */
  autoPull?: boolean;
  /** Serve a loaded model of the same category instead of a cold load that cannot fit. Default true. */
  vramFallback?: boolean;
  /** What to do with a client's num_ctx: "strip" (default), "warn" or "passthrough". */
  contextProtection?: "strip" | "warn" | "passthrough";
  /** Serve /api/generate-image and /v1/images/generations; off = 503. Default true. */
  imageGeneration?: boolean;
  /** Serve /api/transcribe; off = 503. Default true. */
  transcription?: boolean;
  /** Route vision embedding models to native vision servers; off = 503. Default true. */
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
  /** Model that summarises a conversation's oldest turns when clearing tool results is not enough. Default: the model serving it. */
  summaryModel?: string;
  /**
   * When set, /v1/messages requires this key in `x-api-key` (or `Authorization: Bearer`).
   * A single-key shortcut for herds without auth.clients; with auth.clients, give Anthropic clients a key there.
   */
  apiKey?: SecretValue;
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

export interface PlatformConfig {
  /** Where the platform is, when a connect request names none. Default "https://gotomy.ai". */
  url?: string;
}

export interface TelemetryConfig {
  /** Send a daily usage roll-up to a connected platform. Default false. */
  localSummary?: boolean;
  /** Include per-tag counts in that roll-up. Default false. */
  includeTags?: boolean;
  /** Export each request's spans and herd's key metrics over OTLP/HTTP (JSON) to a collector. Off when absent. See docs/telemetry.md. */
  otlp?: OtlpConfig;
}

export interface OtlpConfig {
  /** The collector's OTLP/HTTP base URL, e.g. "http://collector:4318": herd posts to /v1/traces and /v1/metrics under it. */
  endpoint: string;
  /** Headers sent with every export (an API key, say); each value is a secret. */
  headers?: Record<string, SecretValue>;
  /** The resource's service.name. Default "herd". */
  serviceName?: string;
  /** Export a span tree per request. Default true. */
  traces?: boolean;
  /** Export the metrics /metrics shows, and a latency histogram. Default true. */
  metrics?: boolean;
  /** How often buffered spans and the metrics are sent, in ms (≥ 100). Default 10000. */
  intervalMs?: number;
}

export interface AgentsConfig {
  /** What a worker runs, by profile name (POST /members picks one). */
  profiles?: Record<string, AgentProfileConfig>;
  /** The profile of a spawn that names none. Default: the first profile. */
  defaultProfile?: string;
  /** The leads' credentials, sent as `Authorization: Bearer`. Without them every agents route answers 401. */
  credentials?: {
    /** May do everything a lead does: spawn, stop, send, drain. */
    primary?: SecretValue;
    /** May send turns and read, nothing else. */
    architect?: SecretValue;
  };
  /** How long a worker's pane may take to start before 502 spawn_timeout. Default 10000. */
  spawnTimeoutMs?: number;
  /**
   * How long a turn may stay open without the worker's reply before herd gives it up: the turn
   * fails ("failed", its ticket too) and the worker is idle again. Default 1800000 (30 minutes).
   */
  turnTimeoutMs?: number;
  /** Each worker's inbox of held replies: a reply past either cap is refused (429 inbox_full) until a lead drains it. */
  inbox?: {
    /** Default 100. */
    maxReplies?: number;
    /** The held replies' content in bytes (UTF-8), together. Default 8388608 (8 MB). */
    maxBytes?: number;
  };
}

export interface AgentProfileConfig {
  /** The program, e.g. "claude"; found on the router's PATH. */
  command: string;
  args?: string[];
  /**
   * The names of the router's environment variables a worker inherits (an allow-list; nothing
   * else is passed). herd adds HERD_URL, HERD_SESSION_ID, HERD_TOKEN, OPENAI_BASE_URL and
   * ANTHROPIC_BASE_URL itself, and never passes TMUX, TMUX_PANE or a variable a herd secret is read from.
   */
  env?: string[];
  /** Working directory; relative to the config file. Default: the config file's directory. */
  cwd?: string;
  /** Workers of this profile at once; one more is 503 no_capacity. Default 4. */
  capacity?: number;
  /**
   * The name of an `auth.clients` entry whose key the worker's own model calls use, given to it as
   * OPENAI_API_KEY and ANTHROPIC_API_KEY (ANTHROPIC_AUTH_TOKEN for claude-code; herd's key, not a provider's). Needed when auth.clients is set.
   */
  clientKey?: string;
  /**
   * What a "claude-code" profile's workers may do without a prompt, in Claude Code's rule syntax
   * ("Bash(git commit *)", "Edit"): its workers run in Claude Code's dontAsk mode, so a tool call
   * no rule allows is refused to the model, never asked. herd's own tools are always allowed.
   */
  permissions?: { allow?: string[]; deny?: string[] };
}
