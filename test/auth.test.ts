// Who may use the herd, through a real router: node agents enroll with a node
// credential (or, with none configured, only declared nodes may report); clients
// need a key when auth.clients is set, refused in each surface's own format by
// the official SDKs, with per-key rate limits, in-flight caps and model
// allow-lists; an admin token guards every change to the fleet; secrets never
// show up in logs, traces, errors or status; the store is private to its user.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { sameSecret } from "../src/config/credentials/tokens.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, herd, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

setDefaultTimeout(15_000);

const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
const ADMIN = "adm-7c1e0f9a2b4d6e8f";
const NODE_TOKEN = "node-3b5d7f9a1c2e4f60";
const MINI_TOKEN = "mini-0a9b8c7d6e5f4a3b";
const KEY = { app: "sk-app-5e4d3c2b1a0f9e8d", limited: "sk-lim-1f2e3d4c5b6a7980", single: "sk-one-a1b2c3d4e5f60718", fromEnv: "sk-env-99887766554433aa", scraper: "sk-prom-77aa66bb55cc44dd" };
const SECRETS = [ADMIN, NODE_TOKEN, MINI_TOKEN, ...Object.values(KEY)];
const WRONG = "wrong-c0ffee-c0ffee-c0ffee";

let studio: SimNode;
let mini: SimNode;
let slow: SimNode;
let dir: string;
let configFile: string;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let url: string;

afterAll(cleanupFile);

beforeAll(async () => {
  [studio, mini, slow] = await Promise.all([
    startSimOllama({ id: "studio", models: ["llama3.2:3b", "qwen3:8b"], loaded: ["llama3.2:3b", "qwen3:8b"] }),
    startSimOllama({ id: "mini", models: ["llama3.2:1b"], loaded: ["llama3.2:1b"] }),
    // Writes slowly (its polls are as quick as any), so a chat with it stays in flight long enough to see a cap.
    startSimOllama({ id: "slow", models: ["gemma3:4b"], loaded: ["gemma3:4b"], tokensPerSecond: 20 }),
  ]);
  dir = tmpDir();
  configFile = join(dir, "herd.config.ts");
  // The node credential from a file next to the config (a relative path), the admin token from the environment.
  writeFileSync(join(dir, "node.token"), `${NODE_TOKEN}\n`);
  writeFileSync(
    configFile,
    `export default {
  nodes: [{ id: "studio", ollama: "${studio.url}" }, { id: "slow", ollama: "${slow.url}" }, { id: "mini", token: "${MINI_TOKEN}" }],
  heartbeat: ${JSON.stringify(FAST)},
  features: { autoPull: false },
  auth: {
    nodeToken: { file: "node.token" },
    adminToken: { env: "HERD_TEST_ADMIN_TOKEN" },
    clients: [
      { name: "app", key: "${KEY.app}" },
      { name: "limited", key: "${KEY.limited}", rateLimit: { requestsPerMinute: 4 }, models: ["llama3.2:*"] },
      { name: "single", key: "${KEY.single}", maxInFlight: 1 },
      { name: "ops", key: { env: "HERD_TEST_OPS_KEY" } },
      { name: "prometheus", key: "${KEY.scraper}", permissions: ["metrics"] },
    ],
  },
};\n`,
  );
  router = await startRouterProcess(["serve", "--config", configFile, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], {
    env: { HERD_TEST_ADMIN_TOKEN: ADMIN, HERD_TEST_OPS_KEY: KEY.fromEnv },
  });
  url = router.url;
  await eventually(async () => (await status(KEY.app)).nodes.filter((n: any) => n.status === "online").length === 2, 4000, "studio and slow online");
});

afterAll(async () => {
  await router?.stop();
  await Promise.all([studio?.stop(), mini?.stop(), slow?.stop()]);
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function status(key = KEY.app): Promise<any> {
  const res = await fetch(`${url}/fleet/status`, { headers: bearer(key) });
  expect(res.status).toBe(200);
  return res.json();
}

const nodeIds = async () => (await status()).nodes.map((n: any) => n.node_id);

function chat(model: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }], stream: false, ...extra }),
  });
}

describe("nodes enroll with a node credential", () => {
  test("an agent with the fleet-wide token joins and serves; its own token works too", async () => {
    // The agent's machine has no HERD_TEST_ADMIN_TOKEN: an agent needs only its own credential.
    const agent = spawnHerd(["node", "--router", url, "--ollama", mini.url, "--node-id", "mini", "--config", configFile], { env: { HERD_NODE_TOKEN: NODE_TOKEN } });
    await eventually(async () => (await status()).nodes.find((n: any) => n.node_id === "mini")?.status === "online", 5000, "mini online");
    const res = await chat("llama3.2:1b", bearer(KEY.app));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("mini");
    await agent.stop();

    // --token-file with mini's own token (nodes[].token), read from a file.
    const own = join(dir, "mini.token");
    writeFileSync(own, MINI_TOKEN);
    const before = (await status()).nodes.find((n: any) => n.node_id === "mini").last_seen;
    const second = spawnHerd(["node", "--router", url, "--ollama", mini.url, "--node-id", "mini", "--config", configFile, "--token-file", own]);
    await eventually(async () => (await status()).nodes.find((n: any) => n.node_id === "mini").last_seen > before + 0.3, 5000, "mini reporting again");
    expect(second.output()).not.toContain("answered 401");
    await second.stop();
  });

  test("a wrong or missing token is refused with 401 and a log line, and never creates a node", async () => {
    const wrong = spawnHerd(["node", "--router", url, "--ollama", mini.url, "--node-id", "intruder", "--config", configFile], { env: { HERD_NODE_TOKEN: WRONG } });
    await wrong.waitFor(/heartbeat not delivered \(router at .* answered 401: .*invalid node credential/);
    await router.waitFor(/heartbeat from \S+ refused \(401\): node "intruder" sent an invalid node credential/);
    await wrong.stop();

    const post = (headers: Record<string, string>, nodeId = "intruder") =>
      fetch(`${url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ node_id: nodeId, ollama_url: mini.url }) });
    const missing = await post({});
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as any).error).toContain("sent no node credential");
    // mini's own token is mini's only: another node cannot use it.
    expect((await post(bearer(MINI_TOKEN), "studio")).status).toBe(401);
    expect(await nodeIds()).not.toContain("intruder");
    expect(await nodeIds()).toEqual(expect.arrayContaining(["studio", "slow"]));
  });

  test("with no credential configured only declared nodes may report; an undeclared one gets 403 and a log line saying how to add it", async () => {
    const openDir = tmpDir();
    const file = join(openDir, "herd.config.json");
    writeFileSync(file, JSON.stringify({ nodes: [{ id: "declared" }], heartbeat: FAST }));
    const open = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(openDir, "data")]);
    const post = (nodeId: string) => fetch(`${open.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ node_id: nodeId, ollama_url: mini.url }) });
    const refused = await post("stranger");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toContain(`nodes: [{ id: "stranger" }]`);
    await open.waitFor(/heartbeat from \S+ refused \(403\): node "stranger" is not declared in the config; add it to herd.config.ts \(nodes: \[\{ id: "stranger" \}\]\)/);
    expect(await post("declared").then((r) => r.json())).toEqual({ status: "ok", node_status: "online" });
    const nodes = (await getJson(`${open.url}/fleet/status`)).nodes.map((n: any) => n.node_id);
    expect(nodes).toEqual(["declared"]);

    // Open mode says so once at start-up, and fleet changes are allowed from this machine (loopback) only.
    expect(open.output().match(/no client keys configured: anyone who can reach 127\.0\.0\.1:\d+ may use the herd/g)).toHaveLength(1);
    expect(open.output()).toContain("no admin token configured: only this machine (loopback) may change the fleet");
    const change = await fetch(`${open.url}/dashboard/api/settings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ auto_pull: false }) });
    expect(change.status).toBe(200);
    // A program's change goes whatever its body's type, as with Ollama: the API reference's own `curl … -d '{"name":"codestral"}'`
    // sends curl's form type. One that another site's page sent is refused in the route's format.
    const curl = await fetch(`${open.url}/dashboard/api/settings`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: JSON.stringify({ auto_pull: true }) });
    expect([curl.status, await curl.json()]).toEqual([200, expect.objectContaining({ status: "updated" })]);
    const pull = await fetch(`${open.url}/api/pull`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: '{"name":"codestral","stream":false}' });
    expect(pull.status).not.toBe(415);
    expect(((await pull.json()) as any).error ?? "").not.toContain("Content-Type");
    const foreign = await fetch(`${open.url}/api/pull`, { method: "POST", headers: { "content-type": "application/json", origin: "http://evil.example" }, body: '{"model":"x"}' });
    expect([foreign.status, foreign.headers.get("x-fleet-node")]).toEqual([403, "none"]);
    expect(((await foreign.json()) as any).error).toContain("another site's page (Origin: http://evil.example)");
    await open.stop();
  });

  test("tokens are compared in constant time over their hashes: any length, no throw, exact matches only", () => {
    expect(sameSecret(ADMIN, ADMIN)).toBe(true);
    expect(sameSecret(ADMIN.slice(0, -1), ADMIN)).toBe(false);
    expect(sameSecret(`${ADMIN}x`, ADMIN)).toBe(false);
    expect(sameSecret("", ADMIN)).toBe(false);
    expect(sameSecret("x".repeat(10_000), ADMIN)).toBe(false);
    expect(sameSecret(ADMIN.toUpperCase(), ADMIN)).toBe(false);
  });

  test("a report with the node's credential says what that node serves, never what another's does: its MLX server does not take a name studio's Ollama holds", async () => {
    const calls: string[] = [];
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (calls.push(new URL(req.url).pathname), Response.json({})) });
    const beat = (body: Record<string, unknown>) =>
      fetch(`${url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json", ...bearer(MINI_TOKEN) }, body: JSON.stringify({ node_id: "mini", ollama_url: mini.url, ...body }) });
    for (const status of ["healthy", "stopped"]) {
      expect((await beat({ mlx_servers: [{ port: server.port, model: "llama3.2:3b", status }] })).status).toBe(200);
      const res = await chat("llama3.2:3b", bearer(KEY.app));
      await res.arrayBuffer();
      expect([res.status, res.headers.get("x-fleet-node")]).toEqual([200, "studio"]);
    }
    expect(calls).toEqual([]);
    await beat({ goodbye: true });
    await server.stop(true);
  });
});

describe("client keys", () => {
  test("the OpenAI SDK: its key works; a wrong one is a 401 AuthenticationError in OpenAI's error shape", async () => {
    const ok = await new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY.app, maxRetries: 0 }).chat.completions.create({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] });
    expect(ok.choices[0]!.message.content).toBeTruthy();
    const error = await new OpenAI({ baseURL: `${url}/v1`, apiKey: WRONG, maxRetries: 0 }).chat.completions.create({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error.status).toBe(401);
    expect(error.error).toMatchObject({ message: "invalid API key", type: "invalid_request_error", code: "invalid_api_key" });
    // The Responses surface speaks OpenAI's shape too.
    const responses = await fetch(`${url}/v1/responses`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", input: "hi" }) });
    expect(responses.status).toBe(401);
    expect(((await responses.json()) as any).error).toMatchObject({ type: "invalid_request_error", code: "invalid_api_key" });
  });

  test("the Anthropic SDK sends x-api-key: the key works; a wrong one is a 401 authentication_error", async () => {
    const ok = await new Anthropic({ baseURL: url, apiKey: KEY.app, maxRetries: 0 }).messages.create({ model: "llama3.2:3b", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    expect(ok.content.length).toBeGreaterThan(0);
    const error = await new Anthropic({ baseURL: url, apiKey: WRONG, maxRetries: 0 }).messages.create({ model: "llama3.2:3b", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(error.error).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid API key" } });
  });

  test("the Ollama SDK with an Authorization header: the key works; without it, a 401 with Ollama's {error}", async () => {
    const ok = await new Ollama({ host: url, headers: bearer(KEY.fromEnv) }).chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] });
    expect(ok.message.content).toBeTruthy();
    const error = await new Ollama({ host: url }).chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(error.status_code).toBe(401);
    expect(error.error).toContain("API key required");
    const raw = await chat("llama3.2:3b");
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toBe('Bearer realm="herd"');
    expect(raw.headers.get("x-fleet-node")).toBe("none");
    expect(await raw.json()).toEqual({ error: "API key required: send it as Authorization: Bearer <key> (or x-api-key)" });
  });

  test("read routes need a key too; /healthz and the dashboard's pages stay open", async () => {
    for (const path of ["/api/tags", "/api/ps", "/v1/models", "/fleet/status", "/fleet/queue", "/dashboard/api/traces", "/dashboard/api/settings", "/dashboard/events"]) {
      const res = await fetch(`${url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
    }
    const models = await fetch(`${url}/v1/models`, { headers: bearer(KEY.app) });
    expect(((await models.json()) as any).data.map((m: any) => m.id)).toContain("llama3.2:3b");
    for (const path of ["/healthz", "/dashboard", "/dashboard/settings", "/dashboard/assets/herd.js", "/favicon.svg"]) {
      expect({ path, status: (await fetch(`${url}${path}`)).status }).toEqual({ path, status: 200 });
    }
    const icon = await fetch(`${url}/favicon.ico`, { redirect: "manual" });
    expect([icon.status, icon.headers.get("location")]).toEqual([301, "/favicon.svg"]);
  });

  test("the key's name is a trace tag; a key: tag a client sends itself is dropped, also one that only looks like it; one that looks like user: is one", async () => {
    // KEY:, fullwidth, a zero-width space, Cyrillic к е у, a ratio sign for the colon; User: and Cyrillic е in user.
    const mimics = ["KEY:ops", "\uff4b\uff45\uff59\uff1aops", "k\u200bey:ops", "\u043a\u0435\u0443:ops", "key\u2236ops", "User:alice", "us\u0435r:bob"];
    const res = await chat("llama3.2:3b", { ...bearer(KEY.app), "x-herd-tags": "chat-ui,key:ops,Key:ops" }, { metadata: { tags: mimics } });
    expect(res.status).toBe(200);
    const traces = await eventually(async () => {
      const r = await fetch(`${url}/dashboard/api/traces?limit=50`, { headers: bearer(ADMIN) });
      const list = ((await r.json()) as any).traces;
      return list.find((t: any) => t.tags.includes("chat-ui")) && list;
    }, 3000, "the tagged trace");
    expect(traces.find((t: any) => t.tags.includes("chat-ui")).tags.sort()).toEqual(["chat-ui", "key:app", "user:alice", "user:bob"]);
  });

  test("a model outside the key's allow-list is a 403 naming it, in the surface's format; one inside works", async () => {
    const ollama = await chat("qwen3:8b", bearer(KEY.limited));
    expect(ollama.status).toBe(403);
    expect(((await ollama.json()) as any).error).toBe(`key "limited" may not use model "qwen3:8b"; it may use "llama3.2:*" (auth.clients[].models)`);
    const openai = await new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY.limited, maxRetries: 0 }).chat.completions.create({ model: "qwen3:8b", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(openai).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(openai.error.message).toContain(`may not use model "qwen3:8b"`);
    // A fallback model outside the list is refused as well.
    const fallback = await chat("llama3.2:3b", bearer(KEY.limited), { fallback_models: ["qwen3:8b"] });
    expect(fallback.status).toBe(403);
    expect((await chat("llama3.2:3b", bearer(KEY.limited))).status).toBe(200);
  });

  test("a key over its rate limit gets 429 with Retry-After", async () => {
    // "limited" allows 4 a minute; the allow-list test above spent them all, its 403s included.
    let res: Response;
    let sent = 0;
    do {
      res = await chat("llama3.2:3b", bearer(KEY.limited));
      sent++;
    } while (res.status === 200 && sent < 5);
    expect(res.status).toBe(429);
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(((await res.json()) as any).error).toContain(`key "limited" is over its limit of 4 requests per minute`);
    // Another key is not affected.
    expect((await chat("llama3.2:3b", bearer(KEY.app))).status).toBe(200);
  });

  test("a key at its in-flight cap gets 429 until its request finishes", async () => {
    // About 30 tokens at 20 a second: in flight for 1.5 s.
    const short = { options: { num_predict: 30 } };
    const first = chat("gemma3:4b", bearer(KEY.single), short);
    await Bun.sleep(300);
    const second = await chat("gemma3:4b", bearer(KEY.single), short);
    expect(second.status).toBe(429);
    expect(((await second.json()) as any).error).toContain(`key "single" already has 1 requests in flight (auth.clients[].maxInFlight)`);
    expect(second.headers.get("retry-after")).toBeTruthy();
    expect((await first).status).toBe(200);
    expect((await chat("gemma3:4b", bearer(KEY.single), short)).status).toBe(200);
  });
});

describe("the admin token guards every change to the fleet", () => {
  // Bodies that each route refuses with a 400 (or answers harmlessly) once past the guard: nothing changes.
  const ROUTES: [method: string, path: string, body: unknown][] = [
    ["POST", "/fleet/pin", {}],
    ["DELETE", "/fleet/pin/nothing-pinned", undefined],
    ["POST", "/dashboard/api/pull", {}],
    ["POST", "/dashboard/api/delete", {}],
    ["POST", "/dashboard/api/pinned-models", {}],
    ["POST", "/dashboard/api/settings", { auto_pull: "yes" }],
    ["POST", "/dashboard/api/benchmarks", {}],
    ["POST", "/dashboard/api/benchmarks/start", { duration: "long" }],
    ["POST", "/dashboard/api/benchmarks/cancel", {}],
    ["DELETE", "/api/delete", {}],
    ["POST", "/api/copy", {}],
    ["POST", "/api/create", {}],
    ["POST", "/api/push", {}],
  ];
  const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method, headers: { "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });

  test.each(ROUTES)("%s %s: 401 without it or with a client key, through with it", async (method, path, body) => {
    const none = await send(method, path, body);
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error).toContain("send the admin token (auth.adminToken)");
    const client = await send(method, path, body, bearer(KEY.app));
    expect(client.status).toBe(401);
    expect(((await client.json()) as any).error).toBe("invalid admin token");
    const admin = await send(method, path, body, bearer(ADMIN));
    expect([400, 404, 200]).toContain(admin.status);
  });

  test("POST /api/pull: 401 without it; a client key without the pull permission a 403 that says so; through with it", async () => {
    expect((await send("POST", "/api/pull", {})).status).toBe(401);
    const client = await send("POST", "/api/pull", {}, bearer(KEY.app));
    expect(client.status).toBe(403);
    expect(((await client.json()) as any).error).toContain('may not pull models: give it permissions: ["pull"]');
    expect((await send("POST", "/api/pull", {}, bearer(ADMIN))).status).toBe(400);
  });

  test("the admin token also reads and runs models (the dashboard uses it), uncounted by any key", async () => {
    expect((await fetch(`${url}/dashboard/api/settings`, { headers: bearer(ADMIN) })).status).toBe(200);
    expect((await chat("qwen3:8b", bearer(ADMIN))).status).toBe(200);
  });
});

describe("GET /metrics: the operator's too, not only the agent fleet's", () => {
  const scrape = (headers: Record<string, string> = {}) => fetch(`${url}/metrics`, { headers });

  test("the admin token and a key with the metrics permission read it; a key without is a 403 that says how, none a 401", async () => {
    for (const token of [ADMIN, KEY.scraper]) {
      const res = await scrape(bearer(token));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
      expect(await res.text()).toContain("# TYPE herd_requests_total counter");
    }
    const plain = await scrape(bearer(KEY.app));
    expect([plain.status, await plain.json()]).toEqual([403, { error: "forbidden", detail: 'key "app" may not read /metrics: give it permissions: ["metrics"] in auth.clients, or send the admin token' }]);
    const none = await scrape();
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="herd"');
    expect(((await none.json()) as any).detail).toContain('the admin token (auth.adminToken), a client key with permissions: ["metrics"]');
    expect((await scrape(bearer(WRONG))).status).toBe(401);
  });
});

describe("secrets stay secret", () => {
  test("no secret, and no credential a client presented, in the log, traces, status, settings or error bodies", async () => {
    const bodies: string[] = [];
    const grab = async (path: string, headers: Record<string, string> = bearer(ADMIN)) => bodies.push(await (await fetch(`${url}${path}`, { headers })).text());
    await grab("/dashboard/api/traces?limit=1000");
    await grab("/fleet/status");
    await grab("/fleet/queue");
    await grab("/dashboard/api/settings");
    await grab("/dashboard/api/health?refresh=1");
    await grab("/healthz");
    await grab("/api/tags", bearer(WRONG));
    bodies.push(await (await chat("llama3.2:3b", bearer(WRONG))).text());
    bodies.push(await (await fetch(`${url}/heartbeat`, { method: "POST", headers: { ...bearer(WRONG), "content-type": "application/json" }, body: JSON.stringify({ node_id: "x" }) })).text());
    const settings = JSON.parse(bodies[3]!);
    expect(settings.config.auth).toEqual({
      node_token: "••••",
      admin_token: "••••",
      clients: [
        { name: "app", key: "••••" },
        { name: "limited", key: "••••", rateLimit: { requestsPerMinute: 4 }, models: ["llama3.2:*"] },
        { name: "single", key: "••••", maxInFlight: 1 },
        { name: "ops", key: "••••" },
        { name: "prometheus", key: "••••", permissions: ["metrics"] },
      ],
    });
    const everything = [...bodies, router.output()].join("\n");
    for (const secret of [...SECRETS, WRONG]) expect(everything).not.toContain(secret);
  });

  test("the data dir is 0700 and the store's files 0600", () => {
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(join(dir, "data"))).toBe(0o700);
    for (const f of ["herd.sqlite", "herd.sqlite-wal", "herd.sqlite-shm"]) expect({ f, mode: mode(join(dir, "data", f)) }).toEqual({ f, mode: 0o600 });
  });
});

describe("secrets in the config", () => {
  test("a missing variable or file is a config error naming the field; a literal, an env var and a file are accepted", async () => {
    const d = tmpDir();
    const file = join(d, "herd.config.json");
    writeFileSync(file, JSON.stringify({ auth: { adminToken: { env: "HERD_TEST_UNSET_VAR" }, clients: [{ name: "a", key: { file: "missing.key" } }] } }));
    const bad = await herd(["check-config", file]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("auth.adminToken: environment variable HERD_TEST_UNSET_VAR is not set");
    expect(bad.stderr).toContain(`auth.clients[0].key: cannot read secret file ${join(d, "missing.key")} (ENOENT)`);

    writeFileSync(join(d, "a.key"), "sk-from-file\n");
    writeFileSync(file, JSON.stringify({ auth: { adminToken: { env: "HERD_TEST_SET_VAR" }, nodeToken: "literal-node-token", clients: [{ name: "a", key: { file: "a.key" } }] } }));
    const good = await herd(["check-config", file], { env: { HERD_TEST_SET_VAR: "set" } });
    expect(good.stderr).toBe("");
    expect(good.code).toBe(0);
  });

  test("duplicate key names or keys, anthropic.apiKey beside auth.clients, and a profile naming no key are config errors that never show a key", async () => {
    const d = tmpDir();
    const file = join(d, "herd.config.json");
    const agents = { profiles: { dev: { command: "claude", clientKey: "nobody" } } };
    writeFileSync(file, JSON.stringify({ auth: { clients: [{ name: "a", key: "sk-dup-123" }, { name: "a", key: "sk-dup-123" }] }, anthropic: { apiKey: "sk-anth-456" }, agents }));
    const r = await herd(["check-config", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`auth.clients[1].name: "a" is already used by auth.clients[0]`);
    expect(r.stderr).toContain("auth.clients[1].key: the same key as auth.clients[0]");
    expect(r.stderr).toContain("anthropic.apiKey: not used with auth.clients");
    expect(r.stderr).toContain('agents.profiles.dev.clientKey: no auth.clients entry is named "nobody"');
    expect(r.stderr).not.toContain("sk-dup-123");
    expect(r.stderr).not.toContain("sk-anth-456");
  });
});
