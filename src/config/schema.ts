// The config's validator and its defaults. types.ts is the shape users see;
// the assertion at the bottom keeps the two from drifting apart.
import * as v from "valibot";
import type { HerdConfig } from "./types.ts";

const httpUrl = v.pipe(
  v.string(),
  v.check((s) => /^https?:\/\/[^\s/]+/.test(s) && URL.canParse(s), "expected a URL like http://10.0.0.2:11434"),
);
const port = v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(0), v.maxValue(65535));
const ms = v.pipe(v.number(), v.minValue(0, "expected a duration in ms ≥ 0"));
const count = v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(0));
const name = v.pipe(v.string(), v.trim(), v.nonEmpty("expected a non-empty string"));

const mlxServer = v.strictObject({
  model: name,
  port,
  kvBits: v.optional(v.picklist([0, 4, 8], "expected 0, 4 or 8"), 0),
  promptCacheSize: v.optional(count),
  promptCacheBytes: v.optional(count),
  draftModel: v.optional(name),
});

const node = v.strictObject({
  id: v.pipe(name, v.regex(/^[A-Za-z0-9._-]+$/, "expected letters, digits, '.', '_' or '-'")),
  ollama: v.optional(httpUrl),
  mlx: v.optional(v.array(mlxServer), []),
  labels: v.optional(v.record(v.string(), v.string()), {}),
  parallel: v.optional(v.pipe(count, v.minValue(1)), 4),
  draining: v.optional(v.boolean(), false),
  mlxBindHost: v.optional(v.string(), "127.0.0.1"),
  mlxMemoryHeadroomGb: v.optional(v.pipe(v.number(), v.minValue(0)), 10),
  mlxCommand: v.optional(v.pipe(v.array(name), v.minLength(1)), ["mlx_lm.server"]),
});

// `section(entries)` is an optional strict object whose own defaults apply when it is left out.
function section<const E extends v.ObjectEntries>(entries: E) {
  const schema = v.strictObject(entries);
  return v.optional(schema, () => v.parse(schema, {}));
}

export const herdConfigSchema = v.strictObject({
  $schema: v.optional(v.string()),
  server: section({
    host: v.optional(name, "0.0.0.0"),
    port: v.optional(port, 11435),
    dataDir: v.optional(name, "~/.herd"),
  }),
  nodes: v.optional(v.array(node), []),
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
      v.picklist(["score", "round-robin", "least-connections"], 'expected "score", "round-robin" or "least-connections"'),
      "score",
    ),
    maxRetries: v.optional(count, 2),
    clientMaxInFlight: v.optional(count, 0),
    clientRetryAfterSeconds: v.optional(count, 2),
  }),
  timeouts: section({
    connectMs: v.optional(ms, 5000),
    firstByteMs: v.optional(ms, 300000),
    idleMs: v.optional(ms, 120000),
    autoPullMs: v.optional(ms, 300000),
    staleRequestMs: v.optional(ms, 600000),
    imageMs: v.optional(ms, 120000),
    transcriptionMs: v.optional(ms, 300000),
    embeddingMs: v.optional(ms, 30000),
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
    apiKey: v.optional(name),
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
  telemetry: section({
    localSummary: v.optional(v.boolean(), false),
    includeTags: v.optional(v.boolean(), false),
  }),
});

/** A validated config with every default filled in: what the running code reads. */
export type Config = v.InferOutput<typeof herdConfigSchema>;
export type NodeEntry = Config["nodes"][number];

// Compile-time guard: the hand-written public type and the validator accept the same input.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const inSync: Same<v.InferInput<typeof herdConfigSchema>, HerdConfig> = true;
void inSync;
