// Bad input at scale: a few thousand requests, from a fixed seed, to every route
// the app declares — malformed JSON, wrong types for every field, huge strings,
// deep nesting, invalid UTF-8, odd headers, odd methods, odd query strings —
// and malformed HTTP on a raw socket. The router behind them has a healthy
// simulated node, so no answer may be a 5xx; each error must be in its route's
// format; the router must still answer afterwards, its memory flat.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { buildApp } from "../src/app.ts";
import { idleSources } from "../src/app-fixtures.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const SEED = 0x5eed_f022;
const WARMUP = 400;
/** Two equal rounds after the warm-up: a leak grows memory in the second as in the first. */
const ROUND = 1200;
const CONCURRENCY = 8;
const ADMIN_TOKEN = "fuzz-admin-token";
const MODELS = ["llama3.2:3b", "nomic-embed-text"];

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;

afterAll(cleanupFile);
afterAll(async () => {
  await sim?.stop();
});

beforeAll(async () => {
  // Fast enough that a request that does reach the node costs nothing; it never fails.
  sim = await startSimOllama({ id: "n1", models: MODELS, loaded: MODELS, tokensPerSecond: 1_000_000, loadTimeMs: 0 });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  // The admin token keeps fleet changes (pulls, deletes, benchmarks) to the requests that send it;
  // auto-pull off: a model nobody has is a 404 at once, not a pull.
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "n1", ollama: sim.url, parallel: 64 }], auth: { adminToken: ADMIN_TOKEN }, features: { autoPull: false } }));
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).fleet.nodes_online === 1, 3000, "n1 online");
});

// ---- the routes ------------------------------------------------------------

/** Every route of the app, as Elysia registered it, read from an app built over idle sources. */
async function appRoutes(): Promise<{ method: string; path: string }[]> {
  return buildApp(await idleSources()).routes.map((r) => ({ method: r.method, path: r.path }));
}

/** Admin routes the fuzz may change the fleet through: starting a benchmark or deleting the node's models it may not. */
const ADMIN_FUZZED = new Set(["POST /fleet/pin", "DELETE /fleet/pin/*", "POST /dashboard/api/pinned-models", "POST /dashboard/api/settings", "POST /dashboard/api/benchmarks", "POST /dashboard/api/benchmarks/cancel", "POST /api/pull"]);

/** The wire format a route's errors come in. */
function formatOf(path: string): "anthropic" | "openai" | "herd" {
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return "anthropic";
  if (path.startsWith("/v1/")) return "openai";
  return "herd";
}

function inFormat(format: ReturnType<typeof formatOf>, body: any): boolean {
  if (format === "anthropic") return body?.type === "error" && typeof body.error?.type === "string" && typeof body.error?.message === "string";
  if (format === "openai") return typeof body?.error?.message === "string" && typeof body.error.type === "string";
  return typeof body?.error === "string";
}

// ---- the inputs ------------------------------------------------------------

/** mulberry32: small, fast, and the same sequence from the same seed everywhere. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof prng>;

// Bodies a route would accept, field by field: each fuzzed body breaks one or more of their fields.
const chat = { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false, options: { num_predict: 2 } };
const TEMPLATES: Record<string, Record<string, unknown>> = {
  "/api/chat": { ...chat, tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } }], format: "json", keep_alive: "5m", think: false, metadata: { tags: ["a"] }, fallback_models: ["x"] },
  "/api/generate": { model: "llama3.2:3b", prompt: "hi", stream: false, system: "s", raw: false, options: { num_predict: 2 }, images: [] },
  "/api/embed": { model: "nomic-embed-text", input: ["a", "b"], dimensions: 8 },
  "/api/embeddings": { model: "nomic-embed-text", prompt: "a" },
  "/api/show": { model: "llama3.2:3b", verbose: false },
  "/api/pull": { model: "llama3.2:3b", stream: false },
  "/v1/chat/completions": { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: false, stream_options: { include_usage: true }, stop: ["x"], temperature: 0.5, tools: [], response_format: { type: "text" }, user: "u" },
  "/v1/embeddings": { model: "nomic-embed-text", input: "hi", encoding_format: "float", dimensions: 8 },
  "/v1/responses": { model: "llama3.2:3b", input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }], instructions: "be brief", max_output_tokens: 2, stream: false, tools: [] },
  "/v1/messages": { model: "llama3.2:3b", max_tokens: 2, messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], system: "s", stream: false, metadata: { user_id: "u" }, tools: [] },
  "/v1/messages/count_tokens": { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] },
  "/heartbeat": { node_id: "fuzzed", ollama: { reachable: true, models_loaded: [], models_available: [] }, memory: { total_gb: 16, available_gb: 8 } },
  "/fleet/pin": { node_id: "n1", model: "llama3.2:3b" },
  "/dashboard/api/pinned-models": { node_id: "n1", model: "llama3.2:3b", pinned: true },
  "/dashboard/api/settings": { auto_pull: false, vram_fallback: true },
  "/dashboard/api/benchmarks": { run_id: "r", duration_s: 1, total_requests: 1 },
  "/api/generate-image": { model: "x/z-image-turbo", prompt: "a cat", width: 64, height: 64 },
  "/v1/images/generations": { model: "x/z-image-turbo", prompt: "a cat", size: "64x64", n: 1 },
};

const ODD_STRINGS = ["", " ", "\u0000", "\ud800", "💥".repeat(50), "../../etc/passwd", "%00", "<script>", "a\nb", "null", "-1", "1e309", "llama3.2:3b:::", "*", "claude-sonnet-4-5"];

function wrongValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 8 : 11)) {
    case 0: return null;
    case 1: return r.pick([true, false]);
    case 2: return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308]);
    case 3: return r.pick(ODD_STRINGS);
    case 4: return "x".repeat(r.pick([1000, 65_536, 300_000]));
    case 5: return [];
    case 6: return {};
    case 7: return r.pick(MODELS);
    case 8: return Array.from({ length: r.int(4) + 1 }, () => wrongValue(r, depth + 1));
    case 9: return Object.fromEntries(Array.from({ length: r.int(4) + 1 }, () => [r.pick(["role", "content", "type", "name", "text", "function", "arguments", "tool_calls", "images", "x"]), wrongValue(r, depth + 1)]));
    default: return deep(r.pick([50, 1000, 20_000]), r.pick(["array", "object"]));
  }
}

function deep(depth: number, kind: "array" | "object"): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === "array" ? [v] : { a: v };
  return v;
}

/** Raw JSON nested `depth` levels (built as text: JSON.stringify would itself overflow first). */
function deepText(depth: number): string {
  return `${"[".repeat(depth)}1${"]".repeat(depth)}`;
}

// Each kind of bad body; the weights favour the ones that reach deepest into a route.
function badBody(r: Rng, template: Record<string, unknown> | undefined): string | Uint8Array | undefined {
  const base = structuredClone(template ?? { model: r.pick(MODELS) });
  switch (r.int(10)) {
    case 0: // malformed JSON
      return r.pick(["{", "[1,2", '{"model":}', '{"model": "llama3.2:3b",}', "{'model': 'x'}", "NaN", '{"a":1}{"b":2}', "\u0000", "   ", JSON.stringify(base).slice(0, r.int(40))]);
    case 1: // JSON that is not an object
      return JSON.stringify(r.pick([null, 1, "s", [base], true, []]));
    case 2: // deep nesting, as the whole body or inside a field
      return r.chance(0.5) ? deepText(r.pick([1000, 100_000])) : `{"model":"llama3.2:3b","messages":${deepText(r.pick([1000, 50_000]))}}`;
    case 3: { // invalid UTF-8 inside a JSON string
      const json = new TextEncoder().encode(JSON.stringify({ ...base, prompt: "AAAA", input: "AAAA" }));
      const at = json.indexOf(0x41);
      if (at >= 0) json.set(r.pick([[0xff, 0xfe, 0xfd, 0xfc], [0xc0, 0xaf, 0xed, 0xa0], [0x80, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]]), at);
      return json;
    }
    case 4: // no body at all
      return undefined;
    default: { // the route's own fields, one to three of them of the wrong type, maybe a stranger besides
      const keys = Object.keys(base);
      for (let i = 0, n = r.int(3) + 1; i < n && keys.length; i++) base[r.pick(keys)] = wrongValue(r);
      if (r.chance(0.2)) base[r.pick(["unknown_field", "__proto__", "constructor", "model"])] = wrongValue(r);
      return JSON.stringify(base);
    }
  }
}

function oddHeaders(r: Rng): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.chance(0.8)) headers["content-type"] = r.chance(0.6) ? "application/json" : r.pick(["text/plain", "multipart/form-data", "application/x-www-form-urlencoded", "application/json; charset=latin1", "", "*/*", "application/json;;;"]);
  if (r.chance(0.15)) headers[r.pick(["x-herd-tags", "x-fleet-no-fallback", "anthropic-version", "accept", "x-api-key", "authorization", "x-request-id", "user-agent"])] = r.pick([...ODD_STRINGS.filter((s) => !/[\u0000\n\ud800💥]/u.test(s)), "x".repeat(8000), "Bearer ", "Basic Og==", ",,,"]);
  if (r.chance(0.05)) headers["content-encoding"] = r.pick(["gzip", "br", "identity", "bogus"]);
  return headers;
}

function oddQuery(r: Rng): string {
  if (!r.chance(0.3)) return "";
  const key = r.pick(["limit", "days", "hours", "refresh", "model", "node", "run_id", "x", ""]);
  const value = r.pick(["-1", "0", "1", "abc", "1e9", "", "%zz", "%00", "99999999999999999999", "1.5", "x".repeat(3000)]);
  return `?${key}=${value}${r.chance(0.3) ? `&${key}=${value}` : ""}`;
}

function fillPath(r: Rng, path: string): string {
  return path.replace(/:[a-zA-Z]+|\*/g, () => encodeURIComponent(r.pick(["n1", "x", "..", "%", "💥", "n1/llama3.2:3b", "a".repeat(300), ""])) || "x");
}

interface Sent {
  route: string;
  method: string;
  url: string;
  init: RequestInit;
}

function nextRequest(r: Rng, routes: { method: string; path: string }[]): Sent {
  const route = r.pick(routes);
  const key = `${route.method} ${route.path}`;
  const method = r.chance(0.12) ? r.pick(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "FOO"]) : route.method;
  const headers = oddHeaders(r);
  if (ADMIN_FUZZED.has(key) && r.chance(0.7)) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  // Bun's fetch sends no body with a method it does not know (FOO), as with GET and HEAD.
  const hasBody = !["GET", "HEAD", "FOO"].includes(method);
  const body = hasBody ? badBody(r, TEMPLATES[route.path]) : undefined;
  const path = fillPath(r, route.path);
  return { route: key, method, url: `${router.url}${path}${oddQuery(r)}`, init: { method, headers, body, signal: AbortSignal.timeout(15_000) } };
}

// ---- running it ------------------------------------------------------------

interface Outcome {
  sent: Sent;
  status: number;
  body: string;
  error?: string;
}

/** Routes whose answer is a stream that never ends (the dashboard's live events): only their status is read. */
const ENDLESS = new Set(["GET /dashboard/events"]);

async function send(sent: Sent): Promise<Outcome> {
  try {
    const res = await fetch(sent.url, sent.init);
    if (res.ok && ENDLESS.has(`${sent.init.method} ${new URL(sent.url).pathname}`)) {
      await res.body?.cancel();
      return { sent, status: res.status, body: "" };
    }
    return { sent, status: res.status, body: await res.text() };
  } catch (e) {
    return { sent, status: 0, body: "", error: (e as Error).message };
  }
}

async function run(r: Rng, count: number, routes: { method: string; path: string }[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  // Requests are drawn in order from the seed, whatever order they finish in.
  const queue = Array.from({ length: count }, () => nextRequest(r, routes));
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let sent = queue.shift(); sent; sent = queue.shift()) outcomes.push(await send(sent));
    }),
  );
  return outcomes;
}

/** Routes that hand on a node's own failure as a 502: Ollama answers a pull of a name its registry lacks with a 500. */
const NODE_ANSWERS = new Set(["POST /api/pull"]);

/** What is wrong with an answer, or null: no 5xx, no dropped connection, every JSON error in its route's format. */
function problem(o: Outcome): string | null {
  const what = `${o.sent.method} ${o.sent.url.slice(router.url.length, router.url.length + 80)} (route ${o.sent.route})`;
  if (o.error) return `${what}: ${o.error}`;
  if (o.status >= 500 && !(o.status === 502 && NODE_ANSWERS.has(o.sent.route))) return `${what}: HTTP ${o.status} ${o.body.slice(0, 200)}`;
  if (o.status < 400 || o.sent.method === "HEAD" || o.sent.method === "OPTIONS") return null;
  let json: unknown;
  try {
    json = JSON.parse(o.body);
  } catch {
    return `${what}: HTTP ${o.status} with a body that is not JSON: ${o.body.slice(0, 120)}`;
  }
  const path = new URL(o.sent.url).pathname;
  return inFormat(formatOf(path), json) ? null : `${what}: HTTP ${o.status} not in the ${formatOf(path)} error format: ${o.body.slice(0, 200)}`;
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/** Lets the router's garbage collector catch up: a settle, then the smallest of a few readings. */
async function settledRss(): Promise<number> {
  await Bun.sleep(1500);
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(rssMb(router.proc.pid));
    await Bun.sleep(200);
  }
  return Math.min(...readings);
}

describe("fuzz", () => {
  test("the fuzz reaches every route the app declares", async () => {
    const routes = await appRoutes();
    expect(routes.length).toBeGreaterThan(40);
    // Every inference route has a template, so the fuzz gets past its first checks.
    for (const path of ["/api/chat", "/api/generate", "/api/embed", "/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/v1/messages"]) {
      expect(routes.some((r) => r.path === path)).toBe(true);
      expect(TEMPLATES[path]).toBeDefined();
    }
  });

  test(`${WARMUP + 2 * ROUND} requests from seed ${SEED.toString(16)}: no 5xx, every error in its route's format, the router still up, memory flat`, async () => {
    const routes = await appRoutes();
    const r = prng(SEED);
    const outcomes = await run(r, WARMUP, routes);
    const warm = await settledRss();
    outcomes.push(...(await run(r, ROUND, routes)));
    const first = await settledRss();
    outcomes.push(...(await run(r, ROUND, routes)));
    const second = await settledRss();

    const problems = outcomes.map(problem).filter((p): p is string => p !== null);
    if (problems.length) console.log(router.output().split("\n").filter((l) => / error /.test(l)).slice(0, 40).join("\n"));
    expect(problems.slice(0, 20)).toEqual([]);
    // The fuzz got past the first checks: some requests were answered, and every route was hit.
    expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(100);
    expect(new Set(outcomes.map((o) => o.sent.route)).size).toBe(routes.length);
    expect((await getJson(`${router.url}/healthz`)).status).toBe("ok");
    expect(router.proc.exitCode).toBeNull();
    console.log(`fuzz: ${outcomes.length} requests; RSS ${warm.toFixed(0)} MB after the warm-up, ${first.toFixed(0)} after round 1, ${second.toFixed(0)} after round 2`);
    // A leak grows the second round as much as the first; the heap the warm-up grew is reused.
    expect(second - first).toBeLessThan(48);
    expect(second - warm).toBeLessThan(96);
  }, 180_000);

  test("malformed HTTP on a raw socket is refused, never a 5xx, and the router goes on", async () => {
    const { hostname, port } = new URL(router.url);
    const cases = [
      "GARBAGE\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: \u0000\u007f\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\"",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n",
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
      `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2000 }, (_, i) => `X-H${i}: v`).join("\r\n")}\r\n\r\n`,
      "GET /healthz\r\n\r\n",
      "\r\n\r\n\r\n",
      "POST /heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{{{",
    ];
    for (const raw of cases) {
      const answer = await rawExchange(hostname, Number(port), raw);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
      // A refusal, or the connection closed without an answer: either way no 5xx, but HTTP's own 505 for a request
      // line without a version it speaks (HTTP/0.9's, or 9.9).
      const allowed = status < 500 || (status === 505 && !/^\S+ \S+ HTTP\/1\.[01]\r\n/.test(raw));
      if (status) expect({ raw: raw.slice(0, 60), status, allowed }).toEqual({ raw: raw.slice(0, 60), status, allowed: true });
    }
    expect((await getJson(`${router.url}/healthz`)).status).toBe("ok");
  }, 30_000);
});

/** Writes `raw` to a fresh connection; returns whatever comes back before it closes (or a second passes). */
function rawExchange(host: string, port: number, raw: string): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const socket = connect({ host, port }, () => socket.write(raw));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, 1000);
    socket.on("data", (d) => (got += d.toString("latin1")));
    socket.on("close", done);
    socket.on("error", done);
  });
}
