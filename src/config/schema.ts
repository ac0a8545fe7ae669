// The config's validator and its defaults. types.ts is the shape users see;
// the assertion at the bottom keeps the two from drifting apart.
import * as v from "valibot";
import { secretSchema } from "./credentials/secrets.ts";
import { bandwidthForChip, CHIP_NAMES } from "../core/chips.ts";
import type { AnswerCap } from "../core/capped-body.ts";
import type { HerdConfig } from "./types.ts";

/** The `pins` key meaning every node. */
export const EVERY_NODE = "*";

const httpUrl = v.pipe(
  v.string(),
  v.check((s) => /^https?:\/\/[^\s/]+/.test(s) && URL.canParse(s), "expected a URL like http://10.0.0.2:11434"),
);
const port = v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(0), v.maxValue(65535));
const ms = v.pipe(v.number(), v.minValue(0, "expected a duration in ms ≥ 0"));
const count = v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(0));
// Names end up in logs and headers: a control character (CR/LF) there would forge a line.
const name = v.pipe(v.string(), v.trim(), v.nonEmpty("expected a non-empty string"), v.check((s) => !/\p{Cc}/u.test(s), "expected no control characters"));
/** A node's id, in the config and in a heartbeat: it names the node in headers, logs and URLs. */
export const nodeId = v.pipe(name, v.regex(/^[A-Za-z0-9._-]+$/, "expected letters, digits, '.', '_' or '-'"));
const megabytes = v.pipe(v.number(), v.minValue(0.001, "expected a size in MB > 0"), v.maxValue(1024, "expected at most 1024 MB"));

const mlxServer = v.strictObject({
  model: name,
  port,
  kvBits: v.optional(v.picklist([0, 4, 8], "expected 0, 4 or 8"), 0),
  promptCacheSize: v.optional(count),
  promptCacheBytes: v.optional(count),
  draftModel: v.optional(name),
});

const command = v.pipe(v.array(name), v.minLength(1, "expected a command: a non-empty list like [\"program\", \"--flag\"]"));
const serviceHost = v.optional(name, "127.0.0.1");

const images = v.strictObject({
  port: v.optional(port, 11436),
  host: serviceHost,
  models: v.pipe(
    v.array(
      v.strictObject({
        name,
        backend: v.optional(v.picklist(["mflux", "diffusionkit"], 'expected "mflux" or "diffusionkit"'), "mflux"),
        command: v.optional(command),
        model: v.optional(name),
        steps: v.optional(v.pipe(count, v.minValue(1))),
        quantize: v.optional(v.picklist([3, 4, 5, 6, 8], "expected 3, 4, 5, 6 or 8")),
      }),
    ),
    v.minLength(1, "expected at least one image model"),
  ),
});

const transcription = v.strictObject({
  port: v.optional(port, 11437),
  host: serviceHost,
  command: v.optional(command, ["mlx-qwen3-asr"]),
  models: v.optional(v.pipe(v.array(v.strictObject({ name, model: v.optional(name) })), v.minLength(1, "expected at least one model")), [
    { name: "qwen3-asr", model: "Qwen/Qwen3-ASR-0.6B" },
  ]),
});

const embeddingServer = (defaultPort: number, defaultModels: string[]) =>
  v.strictObject({
    port: v.optional(port, defaultPort),
    models: v.optional(v.pipe(v.array(name), v.minLength(1, "expected at least one model")), defaultModels),
  });

const embedding = v.strictObject({
  text: v.optional(embeddingServer(11439, ["nomic-embed-text"])),
  vision: v.optional(embeddingServer(11438, ["dinov2-vit-s14", "clip", "siglip"])),
});

// What an agentless node's owner knows of it; an agent's own report wins where it gives one.
const hardware = v.strictObject({
  memoryGb: v.optional(v.pipe(v.number(), v.minValue(1, "expected the node's memory in GB, at least 1"), v.maxValue(4096, "expected at most 4096 GB"))),
  chip: v.optional(v.pipe(name, v.check((chip) => bandwidthForChip(chip) > 0, `expected an Apple chip herd knows: ${CHIP_NAMES.map((c) => `"${c}"`).join(", ")} (or give bandwidthGbps instead)`))),
  bandwidthGbps: v.optional(v.pipe(v.number(), v.minValue(1, "expected the peak memory bandwidth in GB/s, at least 1"), v.maxValue(10_000, "expected at most 10000 GB/s"))),
});

const node = v.strictObject({
  id: nodeId,
  ollama: v.optional(httpUrl),
  mlx: v.optional(v.array(mlxServer), []),
  labels: v.optional(v.record(v.string(), v.string()), {}),
  // No default here: a node that declares none has its slots learned (fleet/slots.ts) from its release's default.
  parallel: v.optional(v.pipe(count, v.minValue(1))),
  // The node's OLLAMA_CONTEXT_LENGTH; none: its release's own choice (fleet/ollama-releases.ts).
  contextLength: v.optional(v.pipe(count, v.minValue(256, "expected at least 256 tokens"), v.maxValue(16_777_216, "expected at most 16777216 tokens"))),
  draining: v.optional(v.boolean(), false),
  mlxBindHost: v.optional(v.string(), "127.0.0.1"),
  mlxMemoryHeadroomGb: v.optional(v.pipe(v.number(), v.minValue(0)), 10),
  mlxCommand: v.optional(v.pipe(v.array(name), v.minLength(1)), ["mlx_lm.server"]),
  images: v.optional(images),
  transcription: v.optional(transcription),
  embedding: v.optional(embedding),
  token: v.optional(secretSchema),
  hardware: v.optional(hardware),
});

const clientKey = v.strictObject({
  name: v.pipe(name, v.regex(/^[A-Za-z0-9._@-]+$/, "expected letters, digits, '.', '_', '@' or '-'")),
  key: secretSchema,
  rateLimit: v.optional(v.strictObject({ requestsPerMinute: v.pipe(count, v.minValue(1, "expected at least 1")) })),
  maxInFlight: v.optional(v.pipe(count, v.minValue(1, "expected at least 1"))),
  models: v.optional(v.pipe(v.array(name), v.minLength(1, "expected at least one model or glob; leave models out to allow every model"))),
  // What the key may do beyond running models: "pull" lets its requests auto-pull a model no node has (features.autoPull),
  // "metrics" lets it read GET /metrics (a Prometheus scraper).
  permissions: v.optional(v.array(v.picklist(["pull", "metrics"], 'expected "pull" or "metrics"'))),
});

/** A screen pattern (a JavaScript regular expression), bounded: it is tried on the pane's last lines while a worker starts. */
const screenPattern = v.pipe(
  v.string("expected a regular expression"),
  v.minLength(1, "expected a regular expression"),
  v.maxLength(200, "expected a regular expression of at most 200 characters"),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    try {
      new RegExp(dataset.value, "m");
    } catch (e) {
      addIssue({ message: `expected a valid regular expression: ${(e as Error).message}` });
    }
  }),
);

// A Claude Code permission rule, in its own syntax: a tool, or a tool and its specifier ("Bash(git commit *)", "Edit", "mcp__docs").
const permissionRule = v.pipe(name, v.maxLength(500, "expected at most 500 characters"), v.regex(/^[A-Za-z_][\w-]*(\(.+\))?$/s, 'expected a tool rule like "Bash(git commit *)", "Edit" or "mcp__server"'));
const permissionRules = v.optional(v.pipe(v.array(permissionRule), v.maxLength(200, "expected at most 200 rules")), []);
const permissions = v.strictObject({ allow: permissionRules, deny: permissionRules });

const agentProfile = v.pipe(
  v.strictObject({
    command: name,
    args: v.optional(v.array(v.string()), []),
    env: v.optional(v.array(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected an environment variable name"))), []),
    cwd: v.optional(name),
    capacity: v.optional(v.pipe(count, v.minValue(1, "expected at least 1")), 4),
    clientKey: v.optional(name),
    /** Which agent the command is: herd prepares its launch (config, MCP, instructions, hooks) to suit (src/agents/adapters). */
    kind: v.optional(v.picklist(["cli", "claude-code", "codex"], 'expected "cli", "claude-code" or "codex"'), "cli"),
    /** A `cli` program is ready for a turn once its screen matches (its prompt): spawn answers 201 only then (within agents.spawnTimeoutMs). */
    ready: v.optional(v.strictObject({ screen: screenPattern })),
    /** What its workers may do without a prompt; anything else is refused to the model, never asked (docs/agents.md). */
    permissions: v.optional(permissions, () => v.parse(permissions, {})),
  }),
  // Claude Code's and Codex's own signs of readiness are herd's (src/agents/adapters); a pattern would be ignored.
  v.forward(
    v.check((p) => !p.ready || p.kind === "cli", 'only a kind "cli" profile declares ready: herd knows when Claude Code and Codex are ready'),
    ["ready"],
  ),
  v.forward(
    v.check((p) => p.kind === "claude-code" || (p.permissions.allow.length === 0 && p.permissions.deny.length === 0), 'only a "claude-code" profile takes permission rules (kind)'),
    ["permissions"],
  ),
);

// `section(entries)` is an optional strict object whose own defaults apply when it is left out.
function section<const E extends v.ObjectEntries>(entries: E) {
  const schema = v.strictObject(entries);
  return v.optional(schema, () => v.parse(schema, {}));
}

export const herdConfigSchema = v.strictObject({
  $schema: v.optional(v.string()),
  server: section({
    // This machine only, as Ollama binds: a fleet's router says "0.0.0.0" (and sets auth) to be reached from the LAN.
    host: v.optional(name, "127.0.0.1"),
    port: v.optional(port, 11435),
    dataDir: v.optional(name, "~/.herd"),
    shutdownGraceMs: v.optional(ms, 10000),
    maxBodyMb: v.optional(megabytes, 16),
    maxMediaBodyMb: v.optional(megabytes, 64),
    clientMaxPendingBodies: v.optional(v.pipe(count, v.minValue(1, "expected at least 1")), 32),
    clientMaxConnections: v.optional(v.pipe(count, v.minValue(1, "expected at least 1")), 64),
    // Bun's idleTimeout, whole seconds up to 255; at least 5 s, as herd re-arms it each second for a request it answers.
    keepAliveMs: v.optional(v.pipe(ms, v.minValue(5000, "expected at least 5000 ms"), v.maxValue(255_000, "expected at most 255000 ms (Bun's longest idle timeout)")), 10_000),
    maxNodeLineMb: v.optional(megabytes, 16),
    maxNodeAnswerMb: v.optional(megabytes, 64),
    idleShrinkMs: v.optional(ms, 60000),
  }),
  nodes: v.optional(v.array(node), []),
  auth: section({
    nodeToken: v.optional(secretSchema),
    adminToken: v.optional(secretSchema),
    clients: v.optional(v.array(clientKey), []),
  }),
  pins: v.optional(v.record(name, v.array(name)), {}),
  modelMap: v.optional(v.record(name, name), {}),
  scoring: section({
    weights: section({
      hot: v.optional(v.number(), 50),
      warm: v.optional(v.number(), 30),
      cold: v.optional(v.number(), 10),
      memoryFit: v.optional(v.number(), 20),
      queueDepth: v.optional(v.number(), -30),
      waitTime: v.optional(v.number(), -25),
      roleAffinity: v.optional(v.number(), 15),
      availability: v.optional(v.number(), 10),
      contextFit: v.optional(v.number(), 15),
    }),
    bandwidthAware: v.optional(v.boolean(), true),
    normalizeQueueByBandwidth: v.optional(v.boolean(), true),
    queuePenaltyPerRequest: v.optional(v.number(), 6),
    largeModelGb: v.optional(v.number(), 20),
    smallModelGb: v.optional(v.number(), 8),
  }),
  heartbeat: section({
    intervalMs: v.optional(v.pipe(ms, v.minValue(100, "expected at least 100 ms")), 5000),
    timeoutMs: v.optional(ms, 15000),
    offlineMs: v.optional(ms, 30000),
  }),
  routing: section({
    strategy: v.optional(
      v.picklist(["finish-time", "score", "round-robin", "least-connections"], 'expected "finish-time", "score", "round-robin" or "least-connections"'),
      "finish-time",
    ),
    sessionAffinity: v.optional(v.boolean(), true),
    maxRetries: v.optional(count, 2),
    clientMaxInFlight: v.optional(count, 0),
    clientRetryAfterSeconds: v.optional(count, 2),
  }),
  timeouts: section({
    connectMs: v.optional(ms, 5000),
    requestBodyMs: v.optional(v.pipe(ms, v.minValue(1, "expected a duration in ms > 0")), 60000),
    firstByteMs: v.optional(ms, 300000),
    idleMs: v.optional(ms, 120000),
    generationMs: v.optional(ms, 900000),
    clientReadMs: v.optional(ms, 30000),
    autoPullMs: v.optional(ms, 300000),
    staleRequestMs: v.optional(ms, 600000),
    imageMs: v.optional(ms, 120000),
    transcriptionMs: v.optional(ms, 300000),
    embeddingMs: v.optional(ms, 120000),
  }),
  features: section({
    autoPull: v.optional(v.boolean(), true),
    vramFallback: v.optional(v.boolean(), true),
    contextProtection: v.optional(
      v.picklist(["strip", "warn", "passthrough"], 'expected "strip", "warn" or "passthrough"'),
      "strip",
    ),
    imageGeneration: v.optional(v.boolean(), true),
    transcription: v.optional(v.boolean(), true),
    visionEmbedding: v.optional(v.boolean(), true),
  }),
  anthropic: section({
    autoRoute: v.optional(v.boolean(), true),
    maxPromptTokens: v.optional(count, 180000),
    defaultMaxTokens: v.optional(v.pipe(count, v.minValue(1)), 4096),
    visionModel: v.optional(name),
    summaryModel: v.optional(name),
    apiKey: v.optional(secretSchema),
  }),
  mlx: section({
    maxQueueDepth: v.optional(count, 10),
    maxInFlightPerModel: v.optional(v.pipe(count, v.minValue(1)), 1),
    wallClockTimeoutMs: v.optional(ms, 300000),
    retryAfterSeconds: v.optional(count, 10),
  }),
  preloader: section({
    enabled: v.optional(v.boolean(), true),
    maxCount: v.optional(count, 3),
  }),
  rebalancer: section({
    intervalMs: v.optional(ms, 5000),
    threshold: v.optional(count, 4),
    maxPerCycle: v.optional(count, 3),
  }),
  preWarm: section({
    threshold: v.optional(count, 3),
    minAvailability: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1)), 0.6),
  }),
  platform: section({
    url: v.optional(httpUrl, "https://gotomy.ai"),
  }),
  telemetry: section({
    localSummary: v.optional(v.boolean(), false),
    includeTags: v.optional(v.boolean(), false),
    otlp: v.optional(
      v.strictObject({
        endpoint: httpUrl,
        headers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "expected an HTTP header name")), secretSchema), {}),
        serviceName: v.optional(name, "herd"),
        traces: v.optional(v.boolean(), true),
        metrics: v.optional(v.boolean(), true),
        intervalMs: v.optional(v.pipe(ms, v.minValue(100, "expected at least 100 ms")), 10000),
      }),
    ),
  }),
  store: section({
    traces: section({
      maxAgeDays: v.optional(count, 30),
      maxMb: v.optional(v.pipe(v.number(), v.minValue(0, "expected a size in MB ≥ 0 (0: no cap)")), 1024),
      maxTagsPerDay: v.optional(count, 1000),
    }),
  }),
  agents: section({
    profiles: v.optional(v.record(v.pipe(name, v.regex(/^[A-Za-z0-9._-]+$/, "expected letters, digits, '.', '_' or '-'")), agentProfile), {}),
    defaultProfile: v.optional(name),
    credentials: section({ primary: v.optional(secretSchema), architect: v.optional(secretSchema) }),
    spawnTimeoutMs: v.optional(v.pipe(ms, v.minValue(100, "expected at least 100 ms")), 10000),
    turnTimeoutMs: v.optional(v.pipe(ms, v.minValue(1000, "expected at least 1000 ms")), 1_800_000),
    inbox: section({
      maxReplies: v.optional(v.pipe(count, v.minValue(1, "expected at least 1")), 100),
      maxBytes: v.optional(v.pipe(count, v.minValue(1, "expected at least 1 byte")), 8 * 1024 * 1024),
    }),
  }),
});

/** A validated config with every default filled in: what the running code reads. */
export type Config = v.InferOutput<typeof herdConfigSchema>;

export type NodeEntry = Config["nodes"][number];

/** The largest whole answer herd reads from a node or a node's service (server.maxNodeAnswerMb). */
export function nodeAnswerCap(config: Config): AnswerCap {
  return { bytes: Math.round(config.server.maxNodeAnswerMb * 2 ** 20), setting: "server.maxNodeAnswerMb" };
}

// Compile-time guard: the hand-written public type and the validator accept the same input.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const inSync: Same<v.InferInput<typeof herdConfigSchema>, HerdConfig> = true;
void inSync;
