// What a client's requests can make herd keep is bounded (issue 15, item 1): names are capped
// (a 400 naming the field, in the route's format), /metrics names only models the fleet knows,
// a key over its rate limit is refused before anything of its request is stored, and the store
// is kept to store.traces' size.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, startRouterProcess, tmpDir } from "./helpers.ts";

const MODEL = "llama3.2:3b";
const KEY = { open: "sk-bounded-open-0123456789", restricted: "sk-bounded-restricted-0123456789" };
/** The agent fleet's primary credential: what /metrics takes. */
const PRIMARY = "bounded-primary-credential-0123456789";
const RATE = 5;
const MAX_MB = 0.5;

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let url: string;
let dataDir: string;

afterAll(cleanupFile);

beforeAll(async () => {
  sim = await startSimOllama({ id: "mac", models: [MODEL], loaded: [MODEL] });
  const dir = tmpDir();
  dataDir = join(dir, "data");
  const file = join(dir, "herd.config.json");
  writeFileSync(
    file,
    JSON.stringify({
      nodes: [{ id: "mac", ollama: sim.url }],
      features: { autoPull: false },
      store: { traces: { maxMb: MAX_MB } },
      agents: { credentials: { primary: PRIMARY } },
      auth: {
        clients: [
          { name: "open", key: KEY.open, models: ["llama3.2:*"] },
          { name: "restricted", key: KEY.restricted, models: ["llama3.2:*"], rateLimit: { requestsPerMinute: RATE } },
        ],
      },
    }),
  );
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir]);
  url = router.url;
  await eventually(async () => (await get("/fleet/status")).nodes[0]?.status === "online", 3000, "mac online");
});

afterAll(async () => {
  await router?.stop();
  await sim?.stop();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
async function get(path: string): Promise<any> {
  const res = await fetch(`${url}${path}`, { headers: bearer(KEY.open) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}
const post = (path: string, body: unknown, key = KEY.open) => fetch(`${url}${path}`, { method: "POST", headers: bearer(key), body: JSON.stringify(body) });
const chat = (model: string, key = KEY.open, extra: Record<string, unknown> = {}) =>
  post("/api/chat", { model, messages: [{ role: "user", content: "hi" }], stream: false, ...extra }, key);
const metrics = async () => (await fetch(`${url}/metrics`, { headers: bearer(PRIMARY) })).text();
const traces = async () => (await get("/dashboard/api/traces?limit=1000")).traces as { original_model: string; tags: string[]; status: string }[];
const dirBytes = (dir: string) => readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
/** A model name no node has, `length` characters long. */
const madeUp = (i: number, length: number) => `made-up-${i}-`.padEnd(length, "x");

describe("names a client sends are capped", () => {
  test("a 1 MB model name is a 400 naming `model` in each route's format, and nothing of it is kept", async () => {
    const name = "m".repeat(1024 * 1024);
    const routes: [string, Record<string, unknown>, (body: any) => string][] = [
      ["/api/chat", { messages: [] }, (b) => b.error],
      ["/api/generate", { prompt: "hi" }, (b) => b.error],
      ["/api/show", {}, (b) => b.error],
      ["/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, (b) => b.error.message],
      ["/v1/messages", { max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, (b) => b.error.message],
      ["/v1/responses", { input: "hi" }, (b) => b.error.message],
    ];
    for (const [path, body, messageOf] of routes) {
      const res = await post(path, { model: name, ...body });
      const text = await res.text();
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(messageOf(JSON.parse(text))).toBe("model: at most 256 characters (got 1048576)");
      expect(text.length).toBeLessThan(1000);
    }
  });

  test("tags, user, fallback models and X-Herd-Tags are capped too, each named", async () => {
    const long = "t".repeat(300);
    const cases: [Record<string, unknown>, Record<string, string>, string][] = [
      [{ metadata: { tags: [long] } }, {}, "metadata.tags[0]: at most 256 characters (got 300)"],
      [{ metadata: { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) } }, {}, "metadata.tags: at most 32 entries (got 33)"],
      [{ user: long }, {}, "user: at most 256 characters (got 300)"],
      [{ fallback_models: [long] }, {}, "fallback_models[0]: at most 256 characters (got 300)"],
      [{}, { "x-herd-tags": `ok,${long}` }, "X-Herd-Tags[1]: at most 256 characters (got 300)"],
    ];
    for (const [extra, headers, message] of cases) {
      const res = await fetch(`${url}/api/chat`, {
        method: "POST",
        headers: { ...bearer(KEY.open), ...headers },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], stream: false, ...extra }),
      });
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 400, body: { error: message } });
    }
    // At the cap is fine.
    expect((await chat(MODEL, KEY.open, { user: "u".repeat(256 - "user:".length) })).status).toBe(200);
  });
});

describe("refused requests keep a bounded trace", () => {
  test("60 refused requests with 100 KB names leave /metrics and the data dir small", async () => {
    const before = dirBytes(dataDir);
    for (let i = 0; i < 60; i++) expect((await chat(madeUp(i, 100 * 1024))).status).toBe(400);
    // Names under the cap that the key may not use: a 403 each, and a row each, but no label of their own.
    for (let i = 0; i < 60; i++) expect((await chat(madeUp(i, 200))).status).toBe(403);
    await eventually(async () => (await traces()).filter((t) => t.original_model.startsWith("made-up-")).length === 60, 3000, "the 403s' rows");
    const text = await metrics();
    expect(text).not.toContain("made-up-");
    expect(text).toContain('herd_requests_total{status="rejected",model="other",node=""} 60');
    expect(text.length).toBeLessThan(10_000);
    expect(dirBytes(dataDir) - before).toBeLessThan(1024 * 1024);
  });

  test("a model the fleet knows keeps its label even when refused", async () => {
    const res = await post("/api/chat", { model: MODEL, messages: [], fallback_models: ["qwen3:8b"] });
    expect(res.status).toBe(403);
    await eventually(async () => (await metrics()).includes(`herd_requests_total{status="rejected",model="${MODEL}",node=""} 1`), 3000, "the known model's label");
  });

  test("a key over its rate limit is refused before its model is checked, and its 429s leave no rows", async () => {
    const statuses = [];
    for (let i = 0; i < 30; i++) statuses.push((await chat(madeUp(1000 + i, 100), KEY.restricted)).status);
    // The first RATE draw on the budget (403: a model it may not use), every one after is over it.
    expect(statuses).toEqual([...Array(RATE).fill(403), ...Array(30 - RATE).fill(429)]);
    await Bun.sleep(300);
    const rows = (await traces()).filter((t) => t.tags.includes("key:restricted"));
    expect(rows.length).toBe(RATE);
    expect(await metrics()).toContain(`herd_requests_total{status="rejected",model="other",node=""} ${60 + 30}`);
  });
});

test("store.traces.maxMb: the store's data is kept under it, the oldest traces pruned, the all-time totals kept", async () => {
  const tags = Array.from({ length: 8 }, (_, i) => `tag-${i}-`.padEnd(100, "t"));
  const body = { messages: [{ role: "user", content: "hi" }], stream: false, metadata: { tags } };
  const sent = 1000;
  for (let i = 0; i < sent; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => post("/api/chat", { model: madeUp(2000 + i + j, 250), ...body })));
  // Every request with a row, pruned or not: these, the 60 and RATE refused before, the one at the cap and the known model's.
  const { store } = await eventually(async () => {
    const overview = await get("/dashboard/api/overview");
    return overview.total_requests === sent + 60 + RATE + 2 && overview;
  }, 5000, "every request counted");
  expect(store.traces).toBeLessThan(sent / 2);
  expect(store.max_mb).toBe(MAX_MB);
  // The main file stays near the cap (pages freed are reused) plus the batches written between prunes, more on a
  // busy machine; unpruned, these requests make a 4.2 MB file. The log shrinks back after each checkpoint.
  expect(statSync(join(dataDir, "herd.sqlite")).size).toBeLessThan(4 * MAX_MB * 1024 * 1024);
  expect(store.bytes).toBeLessThan(4 * MAX_MB * 1024 * 1024 + 4.5 * 1024 * 1024);
}, 30_000);
