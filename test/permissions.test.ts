// What a client key may make herd do, through a real router: only a key with the
// "pull" permission makes a node auto-pull; a key is never served a model its
// list does not allow, whatever it asked for (a claude-* id, an alias, a
// fallback); its rate limit and model list hold on the routes that run no model
// (count_tokens, /api/show); and a model name that is not whole Unicode is a 400
// naming the field wherever a model name enters.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, startRouterProcess, tmpDir } from "./helpers.ts";

setDefaultTimeout(15_000);

const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
const KEY = { plain: "sk-plain-0f1e2d3c4b5a6978", puller: "sk-pull-8a7b6c5d4e3f2a1b", coder: "sk-code-1a2b3c4d5e6f7a8b", tight: "sk-tight-9f8e7d6c5b4a3921" };
const LONE = "\ud800";

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let url: string;

afterAll(cleanupFile);

beforeAll(async () => {
  // Only the 70b is loaded: what auto-routing picks for a claude-* id when nothing restricts it.
  sim = await startSimOllama({ id: "big", memoryGb: 128, models: ["llama3.3:70b", "qwen2.5-coder:7b", "qwen3:8b"], loaded: ["llama3.3:70b"] });
  router = await routerWith({
    features: { autoPull: true },
    modelMap: { "claude-opus-*": "llama3.3:70b", coder: "qwen2.5-coder:7b" },
    auth: {
      clients: [
        { name: "plain", key: KEY.plain },
        { name: "puller", key: KEY.puller, permissions: ["pull"] },
        { name: "coder", key: KEY.coder, models: ["qwen2.5-coder:*", "claude-*"] },
        { name: "tight", key: KEY.tight, rateLimit: { requestsPerMinute: 2 } },
      ],
    },
  });
  url = router.url;
});

/** A router over the node "big", with `config` beside it, once it sees the node online. */
async function routerWith(config: Record<string, unknown>) {
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "big", ollama: sim.url }], heartbeat: FAST, ...config }));
  const started = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  const online = async () => ((await (await fetch(`${started.url}/fleet/status`, { headers: bearer(KEY.plain) })).json()) as any).nodes[0]?.status === "online";
  await eventually(online, 4000, "big online");
  return started;
}

afterAll(async () => {
  await router?.stop();
  await sim?.stop();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

function post(path: string, key: string | null, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...(key ? bearer(key) : {}) }, body: JSON.stringify(body) });
}

const chat = (model: string, key: string, extra: Record<string, unknown> = {}) => post("/api/chat", key, { model, messages: [{ role: "user", content: "hi" }], stream: false, ...extra });
const messages = (model: string, key: string) => post("/v1/messages", key, { model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });

describe("auto-pull", () => {
  test("a key without the pull permission gets the 404 of auto-pull off, and the node pulls nothing; a key with it pulls", async () => {
    const refused = await chat("gemma3:4b", KEY.plain);
    expect(refused.status).toBe(404);
    const error = ((await refused.json()) as any).error;
    expect(error).toContain(`model "gemma3:4b" not found on any node`);
    expect(error).not.toContain("auto-pull");
    expect(sim.state().counters.pulls ?? 0).toBe(0);
    expect(sim.state().models).not.toContain("gemma3:4b");

    const pulled = await chat("gemma3:4b", KEY.puller);
    expect(pulled.status).toBe(200);
    expect(pulled.headers.get("x-fleet-served-model")).toBe("gemma3:4b");
    expect(sim.state().counters.pulls).toBe(1);
  });
});

describe("a key is served only models its list allows", () => {
  test("a claude-* id on /v1/messages is auto-routed among the key's models only, never to the loaded 70b", async () => {
    // A key without a list gets the best loaded model (first: once the coder is loaded, it is the best).
    const open = await messages("claude-sonnet-4-5", KEY.plain);
    expect(open.headers.get("x-fleet-served-model")).toBe("llama3.3:70b");
    await open.json();
    const res = await messages("claude-sonnet-4-5", KEY.coder);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b");
    await res.json();
  });

  test("an allowed id or alias whose modelMap target is not allowed is a 403 naming both, on /v1/messages and /v1/responses", async () => {
    const anthropic = await messages("claude-opus-4-1", KEY.coder);
    expect(anthropic.status).toBe(403);
    expect(((await anthropic.json()) as any).error).toEqual({
      type: "permission_error",
      message: `key "coder" may not use model "claude-opus-4-1" (it stands for "llama3.3:70b"); it may use "qwen2.5-coder:*", "claude-*" (auth.clients[].models)`,
    });
    const responses = await post("/v1/responses", KEY.coder, { model: "claude-opus-4-1", input: "hi" });
    expect(responses.status).toBe(403);
    expect(((await responses.json()) as any).error.message).toContain(`may not use model "claude-opus-4-1" (it stands for "llama3.3:70b")`);
    // An alias to an allowed model is fine, though the alias itself is not in the list.
    const alias = await chat("coder", KEY.coder);
    expect(alias.status).toBe(200);
    expect(alias.headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b");
  });

  test("a fallback model is checked by what it stands for too", async () => {
    const res = await chat("qwen2.5-coder:7b", KEY.coder, { fallback_models: ["claude-opus-4-1"] });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error).toContain(`may not use model "claude-opus-4-1" (it stands for "llama3.3:70b")`);
  });
});

describe("the routes that run no model count too", () => {
  test("count_tokens takes from the key's per-minute budget: over it, a 429 with Retry-After in Anthropic's format", async () => {
    const count = () => post("/v1/messages/count_tokens", KEY.tight, { model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hello there" }] });
    expect((await count()).status).toBe(200);
    expect((await count()).status).toBe(200);
    const over = await count();
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await over.json()) as any).error).toMatchObject({ type: "rate_limit_error", message: expect.stringContaining(`key "tight" is over its limit of 2 requests per minute`) });
    // /api/show and inference draw on the same budget.
    expect((await post("/api/show", KEY.tight, { model: "qwen3:8b" })).status).toBe(429);
    expect((await chat("qwen3:8b", KEY.tight)).status).toBe(429);
  });

  test("/api/show reads only models the key may use: another is a 403 naming it", async () => {
    const denied = await post("/api/show", KEY.coder, { model: "llama3.3:70b" });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: `key "coder" may not use model "llama3.3:70b"; it may use "qwen2.5-coder:*", "claude-*" (auth.clients[].models)` });
    const byName = await post("/api/show", KEY.coder, { name: "llama3.3:70b" });
    expect(byName.status).toBe(403);
    const allowed = await post("/api/show", KEY.coder, { model: "qwen2.5-coder:7b" });
    expect(allowed.status).toBe(200);
    expect(((await allowed.json()) as any).details.family).toBe("qwen2");
  });
});

describe("a model name with a lone surrogate", () => {
  const surrogate = /unpaired surrogate/;

  test("is a 400 naming the field on every surface, in its format", async () => {
    const cases: [path: string, body: Record<string, unknown>, field: string, read: (j: any) => string][] = [
      ["/api/chat", { model: LONE, messages: [] }, "model", (j) => j.error],
      ["/api/show", { name: LONE }, "name", (j) => j.error],
      ["/v1/chat/completions", { model: LONE, messages: [{ role: "user", content: "hi" }] }, "model", (j) => j.error.message],
      ["/v1/embeddings", { model: LONE, input: "hi" }, "model", (j) => j.error.message],
      ["/v1/responses", { model: LONE, input: "hi" }, "model", (j) => j.error.message],
      ["/v1/messages", { model: LONE, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }, "model", (j) => j.error.message],
      ["/api/chat", { model: "qwen3:8b", messages: [], fallback_models: ["qwen3:8b", LONE] }, "fallback_models[1]", (j) => j.error],
      ["/v1/images/generations", { model: LONE, prompt: "a llama" }, "model", (j) => j.error.message],
    ];
    for (const [path, body, field, read] of cases) {
      const res = await post(path, KEY.plain, body);
      const message = read(await res.json());
      expect({ path, status: res.status, message }).toEqual({ path, status: 400, message: expect.stringMatching(new RegExp(`^${field.replace(/[[\]]/g, "\\$&")}: .*unpaired surrogate`)) });
    }
  });

  test("pins and pulls refuse it alike (400, never a 500), and pinning and unpinning stay consistent", async () => {
    for (let i = 0; i < 2; i++) {
      const toggled = await post("/dashboard/api/pinned-models", null, { node_id: "big", model: LONE, pinned: true });
      expect(toggled.status).toBe(400);
      expect(((await toggled.json()) as any).error).toMatch(surrogate);
    }
    const unpinned = await post("/dashboard/api/pinned-models", null, { node_id: "big", model: LONE, pinned: false });
    expect(unpinned.status).toBe(400);
    const pinned = await post("/fleet/pin", null, { model: LONE });
    expect(pinned.status).toBe(400);
    expect(((await pinned.json()) as any).error).toMatch(/^model: .*unpaired surrogate/);
    const deleted = await fetch(`${url}/fleet/pin/${encodeURIComponent("x")}%ED%A0%80`, { method: "DELETE" });
    expect(deleted.status).toBe(400);
    const pins = await fetch(`${url}/dashboard/api/pinned-models`, { headers: bearer(KEY.plain) });
    expect(((await pins.json()) as any).per_node).toEqual({});
    for (const [path, body] of [["/api/pull", { name: LONE }], ["/dashboard/api/pull", { node_id: "big", model: LONE }]] as const) {
      const res = await post(path, null, body);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(((await res.json()) as any).error).toMatch(surrogate);
    }
    expect(sim.state().counters.pulls ?? 0).toBeLessThanOrEqual(1);
  });
});

describe("POST /api/pull with an admin token set", () => {
  let guarded: Awaited<ReturnType<typeof startRouterProcess>>;
  const ADMIN = "admin-token-5b4c3d2e1f0a9b8c";

  beforeAll(async () => {
    guarded = await routerWith({
      auth: {
        adminToken: ADMIN,
        clients: [
          { name: "plain", key: KEY.plain },
          { name: "puller", key: KEY.puller, permissions: ["pull"] },
          { name: "coder", key: KEY.coder, models: ["qwen2.5-coder:*"], permissions: ["pull"] },
        ],
      },
    });
  });

  afterAll(async () => {
    await guarded?.stop();
  });

  const pull = (key: string, body: Record<string, unknown> = { model: "llama3.2:1b" }) =>
    fetch(`${guarded.url}/api/pull`, { method: "POST", headers: { "content-type": "application/json", ...bearer(key) }, body: JSON.stringify({ stream: false, ...body }) });

  test("a key with the pull permission may pull; a key without it gets a 403 that says what to give it", async () => {
    const before = sim.state().counters.pulls ?? 0;
    const refused = await pull(KEY.plain);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toContain(`key "plain" may not pull models: give it permissions: ["pull"]`);
    expect(sim.state().counters.pulls ?? 0).toBe(before);

    const pulled = await pull(KEY.puller);
    expect({ status: pulled.status, body: await pulled.text() }).toEqual({ status: 200, body: expect.stringContaining('"status":"success"') });
    expect(sim.state().counters.pulls).toBe(before + 1);
    expect(sim.state().models).toContain("llama3.2:1b");
  });

  test("a key's pull permission reaches only the key's own models, onto the node herd picks: another model or a node_id is a 403", async () => {
    const before = sim.state().counters.pulls ?? 0;
    const other = await pull(KEY.coder, { model: "llama3.2:1b" });
    expect([other.status, ((await other.json()) as any).error]).toEqual([403, `key "coder" may not pull "llama3.2:1b": it is not among the key's models (auth.clients[].models)`]);
    const placed = await pull(KEY.coder, { model: "qwen2.5-coder:7b", node_id: "big" });
    expect([placed.status, ((await placed.json()) as any).error]).toEqual([403, `key "coder" may not choose the node a pull goes to: leave node_id out, or send the admin token`]);
    expect(sim.state().counters.pulls ?? 0).toBe(before);
    const own = await pull(KEY.coder, { model: "qwen2.5-coder:7b" });
    expect(own.status).toBe(200);
    // The admin still chooses.
    const admin = await pull(ADMIN, { model: "qwen2.5-coder:7b", node_id: "big" });
    expect(admin.status).toBe(200);
  });
});
