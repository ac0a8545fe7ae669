// The fuzz's heartbeats, from a fixed seed (test/fuzz.test.ts sends them to a router in open mode and one that
// takes a node credential): whole reports and broken ones, every string odd (CR/LF, ESC and CSI, bidi overrides,
// lone surrogates, past its bound), numbers out of range, lists past their caps, goodbyes, and the takeovers of
// issue 27: a polled node's memory, labels and version, MLX and embedding servers claiming the fleet's models,
// an address-less node's Ollama loading a thousand new models a beat. Each answer is judged by `heartbeatProblem`.
import { type Outcome, type Rng, type Sent, prng } from "./fuzz-cases.ts";

export const HEARTBEAT_SEED = 0x5eed_b3a7;
export const NODE_TOKEN = "fuzz-node-token";
/** The fleet's own models, on the polled node n1: no heartbeat may take them from it. */
export const FLEET_MODELS = { chat: "llama3.2:3b", embedder: "nomic-embed-text" };

const ODD_TEXT = [
  "",
  "1.0\r\nINFO forged log line",
  "\u001b[2K\u001b[1Aforged",
  "\u009b2Kforged",
  "a\u2028b\u2029c",
  "\u202eevil\u202c",
  "\ud800",
  "x".repeat(300),
  "x".repeat(70_000),
  "<script>alert(1)</script>",
  "\u0000",
];

/** Whether this beat's fields are odd: half the beats are whole, so they reach what herd does with a report. */
let odd = false;

/** `plain`, or in an odd beat now and then one of `odds`. */
function either<T>(r: Rng, plain: T, odds: readonly unknown[], p = 0.2): T {
  return odd && r.chance(p) ? (r.pick(odds) as T) : plain;
}

const text = (r: Rng, plain: string) => either(r, plain, ODD_TEXT);
const number = (r: Rng, plain: number) => either(r, plain, [-1, 1e308, 2 ** 53, 0.5, "8", null, 70_000], 0.1);

/** A report as an agent sends it, each field odd now and then; `claim` adds what would take the fleet's models. */
function report(r: Rng, nodeId: string): Record<string, unknown> {
  odd = r.chance(0.5);
  const port = r.pick([9, 11439, 65535]);
  const many = either(r, false, [true], 0.1);
  const loaded = many ? Array.from({ length: either(r, 1000, [1001], 0.5) }, (_, i) => ({ name: `fuzz-${r.int(1e9)}-${i}:1b`, size_gb: 1 })) : [{ name: text(r, "fuzz-own:1b"), size_gb: number(r, 1) }];
  const beat: Record<string, unknown> = {
    node_id: nodeId,
    agent_version: text(r, "0.0.1-fuzz"),
    config_hash: text(r, "fuzz-hash"),
    config_error: either(r, null, [...ODD_TEXT, "x".repeat(2001)]),
    ollama_url: text(r, "http://127.0.0.1:9"),
    draining: r.chance(0.3),
    cpu: { cores_physical: number(r, 8), utilization_pct: number(r, 12) },
    memory: { total_gb: number(r, 1), used_gb: number(r, 1), available_gb: number(r, 0), pressure: either(r, r.pick(["nominal", "warning", "critical"]), ["meltdown"]) },
    disk: { total_gb: number(r, 100), available_gb: number(r, 1) },
    hardware: { memory_total_gb: number(r, 1), cores_physical: number(r, 8), chip: text(r, "Apple M1"), memory_bandwidth_gbps: number(r, 68), arch: text(r, "arm64") },
    thermal: { state: either(r, r.pick(["nominal", "critical"]), ["boiling"]) },
    ollama: { reachable: r.chance(0.5), error: text(r, "gone"), version: text(r, "0.13.5"), models_loaded: loaded, models_available: loaded.map((m) => m.name) },
    mlx_servers: Array.from({ length: either(r, 1, [65], 0.1) }, () => ({ port: number(r, port), model: r.chance(0.5) ? FLEET_MODELS.chat : text(r, "org/fuzz-mlx"), status: either(r, r.pick(["healthy", "stopped", "loading"]), ["bogus"]), status_reason: text(r, "") })),
    text_embedding: { models_available: [{ name: r.chance(0.5) ? FLEET_MODELS.embedder : text(r, "fuzz-embed") }] },
    text_embedding_port: number(r, port),
    vision_embedding: { models_available: [{ name: r.chance(0.5) ? FLEET_MODELS.embedder : text(r, "fuzz-vision") }] },
    vision_embedding_port: number(r, port),
    image_models: [{ name: text(r, "x/z-image-turbo"), backend: text(r, "mflux") }],
    image_port: number(r, port),
    transcription_models: [{ name: text(r, "qwen3-asr") }],
    transcription_port: number(r, port),
    labels: either(r, { [text(r, "room")]: text(r, "den") }, [Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "v"]))], 0.1),
  };
  // Most beats carry a few fields, as a broken or partial agent's would.
  for (const key of Object.keys(beat)) if (key !== "node_id" && r.chance(0.4)) delete beat[key];
  return beat;
}

function body(r: Rng, nodeId: string): string {
  switch (r.int(10)) {
    case 0: return r.pick(["{", "[]", "null", '{"node_id":', "\u0000", `{"node_id":"${nodeId}","labels":${"[".repeat(10_000)}`]);
    case 1: return JSON.stringify({ node_id: nodeId, goodbye: true });
    case 2: return JSON.stringify({ ...report(r, nodeId), agent_version: "v".repeat(r.pick([65, 300 * 1024])) }); // past its bound, or past the route's 256 KiB
    default: return JSON.stringify(report(r, nodeId));
  }
}

/**
 * `count` heartbeats drawn in order from the seed's sequence. `secure`: the router takes a node credential; most beats
 * carry none or a wrong one, and only mini's the right one (a credential holder may say what its own node is, never
 * what n1 holds: n1's beats with it are left out, as the holder of n1's credential is n1).
 */
export function heartbeatSequence(secure: boolean, seed = HEARTBEAT_SEED) {
  const r = prng(seed);
  return (count: number, baseUrl: string): Sent[] =>
    Array.from({ length: count }, () => {
      const nodeId = r.pick(["mini", "mini", "n1", "n1", "ghost", "n1\r\nINFO forged", "mini\u001b[2K", ""]);
      const headers: Record<string, string> = { "content-type": "application/json" };
      const token = r.pick([null, null, NODE_TOKEN, "wrong-token", "x".repeat(5000)]);
      if (token && (token !== NODE_TOKEN || (secure && nodeId === "mini"))) headers.authorization = `Bearer ${token}`;
      return { route: "POST /heartbeat", method: "POST", url: `${baseUrl}/heartbeat`, init: { method: "POST", headers, body: body(r, nodeId), signal: AbortSignal.timeout(30_000) }, key: null };
    });
}

/** What is wrong with a heartbeat's answer, or null: only the answers herd gives one, each error in herd's format, a 400 naming what it refused. */
export function heartbeatProblem(o: Outcome): string | null {
  const what = `heartbeat ${String(o.sent.init.body).slice(0, 120)}`;
  if (o.error) return `${what}: ${o.error}`;
  if (![200, 400, 401, 403, 413].includes(o.status)) return `${what}: HTTP ${o.status} ${o.body.slice(0, 200)}`;
  let json: any;
  try {
    json = JSON.parse(o.body);
  } catch {
    return `${what}: HTTP ${o.status} with a body that is not JSON: ${o.body.slice(0, 120)}`;
  }
  if (o.status === 200) return json.status === "ok" ? null : `${what}: 200 without status ok: ${o.body.slice(0, 120)}`;
  if (typeof json.error !== "string") return `${what}: HTTP ${o.status} not in herd's error format: ${o.body.slice(0, 200)}`;
  if (o.status === 400 && !/^invalid heartbeat: \S/.test(json.error)) return `${what}: a 400 that does not say what it refused: ${json.error.slice(0, 200)}`;
  // What a refusal echoes is one line of bounded text.
  if (json.error.length > 4096 || /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(json.error)) return `${what}: an error that is not one short line: ${JSON.stringify(json.error.slice(0, 200))}`;
  return null;
}
