// The fuzz's requests, from a fixed seed, to every route the app declares — malformed JSON, wrong types
// for every field, huge strings, deep nesting, invalid UTF-8, odd headers, odd methods, odd query strings —
// and the holes of issue 15 that a request alone reaches: 1 MB names and tags, lone surrogates and CR/LF
// in names and ids, text/plain and form bodies to admin routes from another site's page, auto-pulls and
// claude-* names asked by a plain key, a rate-limited key on count_tokens with big prompts, heartbeats
// that try to take over a declared node; and requests with many new tags each (issue 27, item 3), which the
// store must keep within its bounds. Each answer is judged by `problem`. Shared by test/fuzz.test.ts
// and the benchmark's fuzz memory line (compile/bench/fuzz-memory.ts).
import { buildApp } from "../src/app.ts";
import { idleSources } from "../src/app-fixtures.ts";
import type { HerdConfig } from "../src/config/types.ts";
import { prng as seeded } from "../src/sim/replies.ts";

export const FUZZ_SEED = 0x5eed_f022;
export const ADMIN_TOKEN = "fuzz-admin-token";
/** The node's models: a chat model every key may use, an embedder, and one the plain key may not use (what claude-* stands for). */
export const FUZZ_MODELS = ["llama3.2:3b", "nomic-embed-text", "qwen3:8b"];
/** Client keys: most requests send the full one, so they get past the key check. */
export const KEYS = {
  full: "sk-fuzz-full",
  plain: "sk-fuzz-plain", // limited to llama3.2:3b and claude-*, no pull permission
  limited: "sk-fuzz-limited",
};
export const PLAIN_MODELS = ["llama3.2:3b"];
export const RATE_LIMIT = 20;
const SECRETS = [ADMIN_TOKEN, ...Object.values(KEYS)];

/**
 * The router's config over the simulated node at `simUrl`. The admin token keeps fleet changes (pulls,
 * deletes, benchmarks) to the requests that send it. Auto-pull is on, but no client key may pull, so a
 * model nobody has is a 404, never a pull. claude-* stands for a model the plain key may not use. "mini"
 * is declared with no address, as an agent's entry is: an open heartbeat must not give it one.
 */
/** How long the fuzzed router waits, idle after a burst, before it gives memory back: short, so a test can see it. */
export const IDLE_SHRINK_MS = 3000;
/** The fuzzed router's store.traces.maxMb: small, so the tags' requests fill it and the pruning is what holds it. */
export const STORE_MAX_MB = 2;

export function fuzzConfig(simUrl: string): HerdConfig {
  return {
    server: { idleShrinkMs: IDLE_SHRINK_MS },
    store: { traces: { maxMb: STORE_MAX_MB } },
    nodes: [{ id: "n1", ollama: simUrl, parallel: 64 }, { id: "mini" }],
    auth: {
      adminToken: ADMIN_TOKEN,
      clients: [
        { name: "full", key: KEYS.full },
        { name: "plain", key: KEYS.plain, models: [...PLAIN_MODELS, "claude-*"] },
        { name: "limited", key: KEYS.limited, rateLimit: { requestsPerMinute: RATE_LIMIT } },
      ],
    },
    modelMap: { "claude-*": "qwen3:8b" },
    features: { autoPull: true },
  } as HerdConfig;
}

export interface Route {
  method: string;
  path: string;
}

/** Every route of the app, as Elysia registered it, read from an app built over idle sources. */
export async function appRoutes(): Promise<Route[]> {
  return buildApp(await idleSources()).routes.map((r) => ({ method: r.method, path: r.path }));
}

/** Admin routes the fuzz may change the fleet through: starting a benchmark or deleting the node's models it may not. */
const ADMIN_FUZZED = new Set(["POST /fleet/pin", "DELETE /fleet/pin/*", "POST /dashboard/api/pinned-models", "POST /dashboard/api/settings", "POST /dashboard/api/benchmarks", "POST /dashboard/api/benchmarks/cancel", "POST /api/pull"]);
const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

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

export function prng(seed: number) {
  const next = seeded(seed);
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
export type Rng = ReturnType<typeof prng>;

const MB = 1024 * 1024;

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

/** Names a client may send that are not plain: too long to keep, not whole Unicode, log-forging, claude-*, or on no node but pullable. */
function oddName(r: Rng): string {
  return r.pick([
    "m".repeat(MB), // 1 MB
    "m".repeat(257),
    "llama3.2\ud800:3b",
    "\udfff",
    "💥".repeat(100).slice(1), // starts with a lone low surrogate
    "llama3.2:3b\r\nINFO forged log line",
    "n1\r\n",
    "a\tb\u0007",
    "claude-sonnet-4-5",
    "claude-3-5-haiku-20241022",
    "claude-opus-4-1",
    "llama3.1:8b", // in the sim's registry: an auto-pull would fetch it
    "qwen3:30b",
    "client-pulled-model:70b",
    "qwen3:8b", // on the node, but not the plain key's
  ]);
}

/** A body that names odd things where a route takes names: the model, tags, fallbacks, a user, a node. */
function oddNames(r: Rng, base: Record<string, unknown>): Record<string, unknown> {
  const at = r.pick(["model", "model", "tags", "fallback_models", "user", "node_id", "name"]);
  const name = oddName(r);
  if (at === "tags") base.metadata = { tags: r.chance(0.5) ? [name] : Array.from({ length: 200 }, (_, i) => `t${i}`) };
  else if (at === "fallback_models") base.fallback_models = [name];
  else if (at === "user") base.metadata = { user_id: name };
  else base[at] = name;
  return base;
}

function wrongValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 8 : 11)) {
    case 0: return null;
    case 1: return r.pick([true, false]);
    case 2: return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308]);
    case 3: return r.pick(ODD_STRINGS);
    case 4: return "x".repeat(r.pick([1000, 65_536, 300_000]));
    case 5: return [];
    case 6: return {};
    case 7: return r.pick(FUZZ_MODELS);
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

/** A big but shallow body: many keys, many items, or one long line past the body limit (16 MB). */
function hugeJson(r: Rng, base: Record<string, unknown>): string {
  switch (r.int(4)) {
    case 0: return JSON.stringify({ ...base, extra: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])) });
    case 1: return JSON.stringify({ ...base, messages: Array.from({ length: 50_000 }, () => ({ role: "user", content: "hi" })) });
    case 2: return JSON.stringify({ ...base, prompt: "x".repeat(8 * MB) }); // one 8 MB line
    default: return JSON.stringify({ ...base, prompt: "x".repeat(17 * MB) }); // past the limit: a 413
  }
}

/** count_tokens over a big prompt (1–4 MB), the work a rate limit must also cover. */
function bigPrompt(r: Rng): string {
  return JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "word ".repeat(r.pick([0.2, 0.4, 0.8]) * MB) }] });
}

// Each kind of bad body; the weights favour the ones that reach deepest into a route. Large bodies are rare:
// where size is not the point, the bodies are small.
function badBody(r: Rng, path: string): string | Uint8Array | undefined {
  const template = TEMPLATES[path];
  const base = structuredClone(template ?? { model: r.pick(FUZZ_MODELS) });
  if (path === "/v1/messages/count_tokens" && r.chance(0.15)) return bigPrompt(r);
  switch (r.int(13)) {
    case 0: // malformed JSON
      return r.pick(["{", "[1,2", '{"model":}', '{"model": "llama3.2:3b",}', "{'model': 'x'}", "NaN", '{"a":1}{"b":2}', "\u0000", "   ", JSON.stringify(base).slice(0, r.int(40))]);
    case 1: // JSON that is not an object
      return JSON.stringify(r.pick([null, 1, "s", [base], true, []]));
    case 2: // deep nesting, as the whole body or inside a field; rarely, a huge shallow one
      if (r.chance(0.1)) return hugeJson(r, base);
      return r.chance(0.5) ? deepText(r.pick([1000, 100_000])) : `{"model":"llama3.2:3b","messages":${deepText(r.pick([1000, 50_000]))}}`;
    case 3: { // invalid UTF-8 inside a JSON string
      const json = new TextEncoder().encode(JSON.stringify({ ...base, prompt: "AAAA", input: "AAAA" }));
      const at = json.indexOf(0x41);
      if (at >= 0) json.set(r.pick([[0xff, 0xfe, 0xfd, 0xfc], [0xc0, 0xaf, 0xed, 0xa0], [0x80, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]]), at);
      return json;
    }
    case 4: // no body at all
      return undefined;
    case 5: case 6: // the route's own body, with odd names in it (mostly small: a 1 MB name is one pick of many)
      return JSON.stringify(oddNames(r, base));
    case 7: // the route's own body as it is: past the first checks, to the key's and the model's
      return JSON.stringify(base);
    default: { // the route's own fields, one to three of them of the wrong type, maybe a stranger besides
      const keys = Object.keys(base);
      for (let i = 0, n = r.int(3) + 1; i < n && keys.length; i++) base[r.pick(keys)] = wrongValue(r);
      if (r.chance(0.2)) base[r.pick(["unknown_field", "__proto__", "constructor", "model"])] = wrongValue(r);
      return JSON.stringify(base);
    }
  }
}

/** A heartbeat that tries to take over a declared node: set its address, drain it, or empty its models. */
function takeover(r: Rng): string {
  const node_id = r.pick(["mini", "n1", "n1\r\nINFO forged", "mini\ud800"]);
  return JSON.stringify({
    node_id,
    ollama_url: r.pick(["http://127.0.0.1:9", "http://attacker.invalid:11434", undefined]),
    draining: r.pick([true, false, undefined]),
    ollama: { reachable: r.chance(0.5), models_loaded: [], models_available: r.chance(0.5) ? [] : [{ name: "llama3.2:3b", size: 1 }] },
  });
}

function oddHeaders(r: Rng): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.chance(0.8)) headers["content-type"] = r.chance(0.6) ? "application/json" : r.pick(["text/plain", "multipart/form-data", "application/x-www-form-urlencoded", "application/json; charset=latin1", "", "*/*", "application/json;;;"]);
  if (r.chance(0.15)) headers[r.pick(["x-herd-tags", "x-fleet-no-fallback", "anthropic-version", "accept", "x-request-id", "user-agent"])] = r.pick([...ODD_STRINGS.filter((s) => !/[\u0000\n\ud800💥]/u.test(s)), "x".repeat(8000), ",,,"]);
  if (r.chance(0.05)) headers["content-encoding"] = r.pick(["gzip", "br", "identity", "bogus"]);
  return headers;
}

/** Who sends it: mostly the full key; else the plain or the rate-limited one, no key, or a broken one. */
function credentials(r: Rng, headers: Record<string, string>): keyof typeof KEYS | null {
  const who = r.pick(["full", "full", "full", "full", "plain", "plain", "limited", "none", "odd"] as const);
  if (who === "none") return null;
  if (who === "odd") {
    headers[r.pick(["x-api-key", "authorization"])] = r.pick(["Bearer ", "Basic Og==", "Bearer sk-fuzz-full\r\n", "x".repeat(8000), ",,,"]);
    return null;
  }
  if (r.chance(0.5)) headers.authorization = `Bearer ${KEYS[who]}`;
  else headers["x-api-key"] = KEYS[who];
  return who;
}

/** A change as another site's page (or the router's own) sends it: a simple request, no preflight. */
function browserOrigin(r: Rng, headers: Record<string, string>, baseUrl: string): void {
  headers["content-type"] = r.pick(["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json"]);
  switch (r.int(5)) {
    case 0: headers.origin = "https://evil.example"; break;
    case 1: headers.origin = baseUrl; break;
    case 2: headers.origin = "null"; break;
    case 3: headers["sec-fetch-site"] = r.pick(["cross-site", "same-site", "same-origin", "none"]); break;
    default: // neither: an old browser, or a program
  }
}

/** The header naming another site's page, as the router reads it (Sec-Fetch-Site first, else Origin against Host). */
function foreign(headers: Record<string, string>, baseUrl: string): boolean {
  const site = headers["sec-fetch-site"];
  if (site !== undefined) return site !== "same-origin" && site !== "none";
  const origin = headers.origin;
  return origin !== undefined && origin !== baseUrl;
}

function oddQuery(r: Rng): string {
  if (!r.chance(0.3)) return "";
  const key = r.pick(["limit", "days", "hours", "refresh", "model", "node", "run_id", "x", ""]);
  const value = r.pick(["-1", "0", "1", "abc", "1e9", "", "%zz", "%00", "99999999999999999999", "1.5", "x".repeat(3000), "%0D%0A", "%ED%A0%80"]);
  return `?${key}=${value}${r.chance(0.3) ? `&${key}=${value}` : ""}`;
}

/** A path parameter, percent-encoded as a client would send it, or raw: CR/LF, a lone surrogate's bytes, a cut sequence. */
function fillPath(r: Rng, path: string): string {
  return path.replace(/:[a-zA-Z]+|\*/g, () => {
    if (r.chance(0.2)) return r.pick(["%0D%0A", "n1%0D%0AINFO%20forged", "%ED%A0%80", "llama3.2%ED%B0%80", "%F0%9F", "claude-sonnet-4-5", "m".repeat(5000)]);
    return encodeURIComponent(r.pick(["n1", "x", "..", "%", "💥", "n1/llama3.2:3b", "a".repeat(300), ""])) || "x";
  });
}

// Tags as clients send them: mostly new ones, of 1 to 256 characters, up to 32 in all across metadata.tags,
// X-Herd-Tags and user; now and then one too many or one too long (a 400).
const TAG_CHARS = ["a", "q", "z", "0", "7", "-", "_", ":", ".", "/", " ", "é", "ß", "💥", "中"];

/** A tag of at most `length` UTF-16 units, never a character cut in half; mostly new (it starts with a random number). */
function tagText(r: Rng, length = r.pick([1, 6, 24, 100, 256])): string {
  let text = r.int(1e9).toString(36).slice(0, length);
  for (let c = r.pick(TAG_CHARS); text.length + c.length <= length; c = r.pick(TAG_CHARS)) text += c;
  return text.trim() || "t";
}

/** A chat whose tags are the point: the full key, on a surface that takes metadata.tags, X-Herd-Tags and user. */
function taggedChat(r: Rng, baseUrl: string): Sent {
  const route = r.pick(["POST /api/chat", "POST /v1/chat/completions"]);
  const path = route.slice("POST ".length);
  const over = r.chance(0.05);
  const total = over ? 33 + r.int(8) : r.int(33);
  const tags = Array.from({ length: total }, () => tagText(r));
  if (over && r.chance(0.3)) tags[0] = "t".repeat(257);
  const user = path === "/v1/chat/completions" && tags.length && r.chance(0.5) ? tags.pop() : undefined;
  const inHeader = r.int(tags.length + 1);
  const { user: _, ...template } = TEMPLATES[path]!;
  const body = { ...template, metadata: { tags: tags.slice(inHeader) }, ...(user === undefined ? {} : { user }) };
  const headers: Record<string, string> = { authorization: `Bearer ${KEYS.full}`, "content-type": "application/json" };
  // A header value is bytes: a client sends its tags there in ASCII.
  if (inHeader) headers["x-herd-tags"] = tags.slice(0, inHeader).map((t) => t.replace(/[^\x20-\x7e]/g, "x")).join(",");
  return { route, method: "POST", url: `${baseUrl}${path}`, init: { method: "POST", headers, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) }, key: "full" };
}

/** `count` tagged chats drawn in order from `seed`'s sequence, as fuzzSequence draws its requests. */
export function taggedSequence(seed = FUZZ_SEED ^ 0x7a95) {
  const r = prng(seed);
  return (count: number, baseUrl: string): Sent[] => Array.from({ length: count }, () => taggedChat(r, baseUrl));
}

export interface Sent {
  route: string;
  method: string;
  url: string;
  init: RequestInit & { headers: Record<string, string> };
  /** The client key it was sent with, by name, or null. */
  key: keyof typeof KEYS | null;
}

function nextRequest(r: Rng, routes: Route[], baseUrl: string): Sent {
  if (r.chance(0.05)) return taggedChat(r, baseUrl);
  const route = r.pick(routes);
  const key = `${route.method} ${route.path}`;
  const method = r.chance(0.12) ? r.pick(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "FOO"]) : route.method;
  const headers = oddHeaders(r);
  let who = credentials(r, headers);
  if (ADMIN_FUZZED.has(key) && r.chance(0.7)) {
    headers.authorization = `Bearer ${ADMIN_TOKEN}`;
    who = null; // an x-api-key beside it is not what the request is judged as
  }
  // Bun's fetch sends a method it does not know (FOO) as a GET, without a body; the raw-socket test sends one.
  const hasBody = !["GET", "HEAD", "FOO"].includes(method);
  let body = hasBody ? badBody(r, route.path) : undefined;
  if (hasBody && route.path === "/heartbeat" && r.chance(0.4)) body = takeover(r);
  // A third of the changes come as a browser sends them, the route's own valid body in a simple request.
  if (CHANGES.has(method) && r.chance(0.3)) {
    browserOrigin(r, headers, baseUrl);
    if (TEMPLATES[route.path] && r.chance(0.7)) body = JSON.stringify(TEMPLATES[route.path]);
  }
  const path = fillPath(r, route.path);
  return { route: key, method, url: `${baseUrl}${path}${oddQuery(r)}`, init: { method, headers, body, signal: AbortSignal.timeout(30_000) }, key: who };
}

/** `count` requests drawn in order from `seed`'s sequence (`r`, so rounds go on where the last ended). */
export function fuzzSequence(seed = FUZZ_SEED) {
  const r = prng(seed);
  return (count: number, routes: Route[], baseUrl: string): Sent[] => Array.from({ length: count }, () => nextRequest(r, routes, baseUrl));
}

/**
 * One well-formed request to each route, as the full key: what a router that has served a little has run
 * (its code paged in), the "before" its memory after the fuzz is held to.
 */
export function wellFormed(routes: Route[], baseUrl: string): Sent[] {
  return routes.map((route) => {
    const template = TEMPLATES[route.path];
    const body = template && !["GET", "HEAD"].includes(route.method) ? JSON.stringify(template) : undefined;
    const headers = { authorization: `Bearer ${KEYS.full}`, "content-type": "application/json" };
    const path = route.path.replace(/:[a-zA-Z]+|\*/g, "n1");
    return { route: `${route.method} ${route.path}`, method: route.method, url: `${baseUrl}${path}`, init: { method: route.method, headers, body, signal: AbortSignal.timeout(30_000) }, key: "full" };
  });
}

// ---- sending and judging ---------------------------------------------------

export interface Outcome {
  sent: Sent;
  status: number;
  body: string;
  headers: Headers;
  error?: string;
}

/** Routes whose answer is a stream that never ends (the dashboard's live events): only their status is read. */
const ENDLESS = new Set(["GET /dashboard/events"]);

async function send(sent: Sent): Promise<Outcome> {
  try {
    const res = await fetch(sent.url, sent.init);
    if (res.ok && ENDLESS.has(sent.route)) {
      await res.body?.cancel();
      return { sent, status: res.status, body: "", headers: res.headers };
    }
    return { sent, status: res.status, body: await res.text(), headers: res.headers };
  } catch (e) {
    return { sent, status: 0, body: "", headers: new Headers(), error: (e as Error).message };
  }
}

/** Sends every request, `concurrency` at a time. */
export async function sendAll(requests: Sent[], concurrency: number): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const queue = [...requests];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let sent = queue.shift(); sent; sent = queue.shift()) outcomes.push(await send(sent));
    }),
  );
  return outcomes;
}

/** Routes that hand on a node's own failure as a 502: Ollama answers a pull of a name its registry lacks with a 500. */
const NODE_ANSWERS = new Set(["POST /api/pull"]);

/** One model by two names: "x" is "x:latest". */
export function sameModel(a: string, b: string): boolean {
  const full = (m: string) => (m.includes(":") ? m : `${m}:latest`);
  return full(a) === full(b);
}

/**
 * What is wrong with an answer, or null: no 5xx, no dropped connection, every JSON error in its route's
 * format, no change taken from another site's page or in a body that is not JSON where JSON only is taken,
 * nothing served by a node an open heartbeat named, the plain key served only its own models, no secret
 * in any answer.
 */
export function problem(o: Outcome, baseUrl: string): string | null {
  const { sent } = o;
  const what = `${sent.method} ${sent.url.slice(baseUrl.length, baseUrl.length + 80)} (route ${sent.route}, key ${sent.key})`;
  if (o.error) return `${what}: ${o.error}`;
  if (o.status >= 500 && !(o.status === 502 && NODE_ANSWERS.has(sent.route))) return `${what}: HTTP ${o.status} ${o.body.slice(0, 200)}`;
  const secret = SECRETS.find((s) => o.body.includes(s));
  if (secret) return `${what}: HTTP ${o.status} shows a secret (${secret.slice(0, 8)}…)`;
  if (o.status >= 200 && o.status < 300) {
    if (CHANGES.has(sent.method) && foreign(sent.init.headers, baseUrl)) return `${what}: HTTP ${o.status} to a change from another site's page`;
    const node = o.headers.get("x-fleet-node");
    if (node && node !== "n1" && node !== "none") return `${what}: served by ${node}, which only an open heartbeat spoke for`;
    const served = o.headers.get("x-fleet-served-model");
    if (sent.key === "plain" && served && served !== "none" && !PLAIN_MODELS.some((m) => sameModel(m, served))) return `${what}: the plain key was served ${served}`;
    return null;
  }
  if (o.status < 400 || sent.method === "HEAD" || sent.method === "OPTIONS") return null;
  // A request head past Bun's 16 KiB (its --max-http-header-size) is refused by the HTTP server itself, before any of
  // herd's code runs: a 431 with no body is HTTP's own answer to it.
  if (o.status === 431 && headSize(sent) > MAX_HEAD_BYTES) return null;
  let json: unknown;
  try {
    json = JSON.parse(o.body);
  } catch {
    return `${what}: HTTP ${o.status} with a body that is not JSON: ${o.body.slice(0, 120)}`;
  }
  const path = new URL(sent.url).pathname;
  return inFormat(formatOf(path), json) ? null : `${what}: HTTP ${o.status} not in the ${formatOf(path)} error format: ${o.body.slice(0, 200)}`;
}

// Less what the client adds to the head unseen here (Host, User-Agent, Accept, …).
const MAX_HEAD_BYTES = 16 * 1024 - 512;
const headSize = (sent: Outcome["sent"]) => sent.url.length + Object.entries(sent.init.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);

/** The routes whose work the rate limit covers besides inference (issue 15, item 14). */
export const LIMITED_READS = new Set(["POST /v1/messages/count_tokens", "POST /api/show"]);

// ---- a node's answers --------------------------------------------------------
// What a fuzzed Ollama answers (test/fuzz.test.ts's stand-in): for each case, from its own seed, a status, a
// content type and a body of one kind — a whole answer or a stream of lines whose fields (counts, durations,
// message, tool calls, embeddings) take wrong types and absurd values, lines that are not JSON, one past the line
// cap, a body past the answer cap, bytes that are not UTF-8, nothing at all — sent at once or line by line.

export const NODE_FUZZ_SEED = 0x5eed_a27;
/** The fuzzed router's caps, small so that a few answers pass them. */
export const NODE_FUZZ_CAPS = { maxNodeLineMb: 0.25, maxNodeAnswerMb: 0.5 };
/** The model the fuzzed node holds, for chat and embeddings. */
export const NODE_FUZZ_MODEL = "llama3.2:3b";

const ABSURD = [0, 1, -1, -1e18, 1e18, 1e308, 2 ** 53, 0.5, "12", "NaN", "1e400", null, true, [], {}, [1, 2], { n: 1 }];

/** One field of an Ollama answer: right most of the time, else absurd. */
function fuzzedFigure(r: Rng, sane: number): unknown {
  return r.chance(0.6) ? sane : r.pick(ABSURD);
}

/** An answer line's fields: the message (or response, or embeddings), and on the last, the counts and durations. */
function fuzzedLine(r: Rng, done: boolean): Record<string, unknown> {
  const line: Record<string, unknown> = { model: r.chance(0.9) ? NODE_FUZZ_MODEL : r.pick(ABSURD), created_at: "2026-01-01T00:00:00Z", done };
  const content = r.chance(0.8) ? "word " : r.pick(ABSURD);
  switch (r.int(8)) {
    case 0: line.message = r.pick(ABSURD); break;
    case 1: line.message = { role: "assistant", content, tool_calls: r.pick([[{ function: { name: "f", arguments: { a: 1 } } }], [{ function: null }], "calls", [null], [{}]]) }; break;
    case 2: line.message = { role: "assistant", content, thinking: r.pick(["hmm", 7, null]) }; break;
    case 3: line.response = content; break;
    case 4: line.embeddings = r.pick([[[0.1, 0.2]], "x", [["a"]], [[]], [null], [[1e308, -1e308]]]); break;
    default: line.message = { role: "assistant", content };
  }
  if (r.chance(0.05)) line.error = r.pick(["the model crashed", 5, { message: "x" }, ""]);
  if (done) {
    line.done_reason = r.pick(["stop", "length", 7, null]);
    for (const [field, sane] of [["prompt_eval_count", 30], ["eval_count", 20], ["total_duration", 5e8], ["load_duration", 1e6], ["prompt_eval_duration", 1e8], ["eval_duration", 4e8]] as const) {
      if (r.chance(0.9)) line[field] = fuzzedFigure(r, sane);
    }
  }
  return line;
}

/** Case `i`'s answer: its status, content type, and the pieces of its body, each sent after `delayMs`. */
export function nodeAnswer(i: number): { status: number; type: string | null; pieces: (string | Uint8Array)[]; delayMs: number } {
  const r = prng(NODE_FUZZ_SEED + i);
  const status = r.chance(0.75) ? 200 : r.pick([400, 404, 500, 502]);
  const delayMs = r.chance(0.85) ? 0 : r.int(60);
  const json = (v: unknown) => `${JSON.stringify(v)}\n`;
  const kind = r.int(10);
  // Mostly the type that fits the body (a stream's for lines), sometimes any other.
  const type = r.chance(0.2) ? r.pick(["application/json; charset=utf-8", "application/x-ndjson", "text/plain", "text/event-stream", null]) : kind >= 7 ? "application/x-ndjson" : "application/json; charset=utf-8";
  let pieces: (string | Uint8Array)[];
  switch (kind) {
    case 0: pieces = []; break; // nothing
    case 1: pieces = [r.pick(["<html>502 Bad Gateway</html>", "not json at all\n", "{\"unterminated\": ", "\n\n\n"])]; break;
    case 2: pieces = [new Uint8Array([0xff, 0xfe, 0x7b, 0x22, 0xc3, 0x28, 0x0a])]; break; // not UTF-8
    case 3: pieces = [json(r.pick([[1, 2], "a string", 42, null]))]; break; // JSON, but not an object
    case 4: pieces = [`{"model":"${NODE_FUZZ_MODEL}","message":{"content":"${"x".repeat(0.3 * MB)}`]; break; // past the line cap, never ended
    case 5: pieces = Array.from({ length: 12 }, () => "y".repeat(64 * 1024)); break; // past the answer cap (768 KB)
    case 6: pieces = [json(fuzzedLine(r, true))]; break; // one whole answer
    default: { // a stream of lines, perhaps with junk among them, perhaps without its end
      const n = r.int(40);
      pieces = Array.from({ length: n }, () => (r.chance(0.05) ? r.pick(["garbage\n", "\n", "{}\n"]) : json(fuzzedLine(r, false))));
      if (r.chance(0.85)) pieces.push(json(fuzzedLine(r, true)));
    }
  }
  return { status, type, pieces, delayMs };
}

/** The fuzzed requests: case `i` to one of the inference routes, its index in the prompt (what the stand-in answers by). */
export function nodeFuzzRequest(i: number, baseUrl: string): { route: string; init: RequestInit & { body: string }; url: string } {
  const r = prng(NODE_FUZZ_SEED ^ (i * 7919));
  const stream = r.chance(0.5);
  const say = `case ${i}`;
  const route = r.pick(["/api/chat", "/api/chat", "/api/generate", "/v1/chat/completions", "/v1/messages", "/api/embed", "/v1/embeddings", "/v1/responses"]);
  const bodies: Record<string, unknown> = {
    "/api/chat": { model: NODE_FUZZ_MODEL, messages: [{ role: "user", content: say }], stream },
    "/api/generate": { model: NODE_FUZZ_MODEL, prompt: say, stream },
    "/v1/chat/completions": { model: NODE_FUZZ_MODEL, messages: [{ role: "user", content: say }], stream },
    "/v1/messages": { model: NODE_FUZZ_MODEL, max_tokens: 16, messages: [{ role: "user", content: say }], stream },
    "/api/embed": { model: NODE_FUZZ_MODEL, input: [say] },
    "/v1/embeddings": { model: NODE_FUZZ_MODEL, input: say },
    "/v1/responses": { model: NODE_FUZZ_MODEL, input: say, stream },
  };
  return { route, url: `${baseUrl}${route}`, init: { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(bodies[route]) } };
}

/** What is wrong with the router's answer to a fuzzed node's answer, or null: a 500 (herd's own failure), or an error not in its route's format. */
export function nodeFuzzProblem(route: string, status: number, text: string): string | null {
  if (status === 500) return `${route}: a 500 (${text.slice(0, 200)})`;
  if (status < 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${route}: a ${status} that is not JSON (${text.slice(0, 120)})`;
  }
  return inFormat(formatOf(route), body) ? null : `${route}: a ${status} not in its format (${text.slice(0, 200)})`;
}
