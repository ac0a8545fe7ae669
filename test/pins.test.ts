// Pins through a real router process over simulated nodes: POST /fleet/pin,
// DELETE /fleet/pin/{model}, the dashboard's pinned-models, the preloader, and
// pins surviving a restart. Node "a" is polled by the router; node "big" reports
// by heartbeats this file sends as its agent would, because only agents report
// memory, which the co-residence check needs. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { probeOllama } from "../src/backends/ollama.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";

let a: SimNode;
let big: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let dir: string;
let configFile: string;
let agent: { stop(): Promise<void> };

const post = (path: string, body: unknown) =>
  fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
const del = (path: string) => fetch(`${router.url}${path}`, { method: "DELETE" });
const nodeStatus = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const pinnedModels = () => getJson(`${router.url}/dashboard/api/pinned-models`);

const startRouter = () => startRouterProcess(["serve", "--config", configFile, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
const bothOnline = () =>
  eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.filter((n: any) => n.status === "online").length === 2, 4000, "a and big online");

// What `herd node` would send for "big": its Ollama as probed, and 32 GB of memory (26 GB for pins after the OS reserve),
// with its node credential (without one, a heartbeat could not say where big's Ollama is).
const BIG_TOKEN = "pins-test-big-token";
function fakeAgent(): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      const heartbeat = {
        node_id: "big",
        ollama_url: big.url,
        memory: { total_gb: 32, used_gb: 8, available_gb: 24, pressure: "nominal" },
        ollama: await probeOllama(big.url, 1000, { bytes: 2 ** 20, setting: "server.maxNodeAnswerMb" }),
      };
      await fetch(`${router.url}/heartbeat`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${BIG_TOKEN}` },
        body: JSON.stringify(heartbeat),
      }).catch(() => {});
      await Bun.sleep(150);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

afterAll(cleanupFile);

beforeAll(async () => {
  [a, big] = await Promise.all([
    startSimOllama({ id: "a", memoryGb: 16, models: ["llama3.2:3b", "qwen3:8b", "qwen3:32b", "llama3.3:70b", "nomic-embed-text", "gpt-oss:120b-cloud"] }),
    startSimOllama({ id: "big", memoryGb: 64, models: ["llama3.2:3b", "qwen3:32b", "gpt-oss:20b"] }),
  ]);
  dir = tmpDir();
  configFile = join(dir, "herd.config.ts");
  writeFileSync(configFile, `export default { nodes: [{ id: "a", ollama: "${a.url}" }, { id: "big", token: "${BIG_TOKEN}" }], pins: { "*": ["llama3.2:3b"] }, ${FAST} };\n`);
  router = await startRouter();
  agent = fakeAgent();
  await bothOnline();
});

afterAll(async () => {
  await agent?.stop();
  await router?.stop();
  await Promise.all([a?.stop(), big?.stop()]);
});

describe("POST /fleet/pin", () => {
  test("with wait: true it loads the model where it is on disk and answers once the router sees it resident", async () => {
    const res = await post("/fleet/pin", { model: "qwen3:8b", wait: true, timeout_s: 5 });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ ok: true, model: "qwen3:8b", pinned_node: "a", ready: true });
    expect(body.ready_after_ms).toBeGreaterThanOrEqual(0);
    expect(body.per_node.a).toEqual(["llama3.2:3b", "qwen3:8b"]);
    expect(a.state().loaded).toContain("qwen3:8b");
    // ready means the router's own view, not just the node's.
    const status = await nodeStatus("a");
    expect(status.ollama.models_loaded.map((m: any) => m.name)).toContain("qwen3:8b");
    expect(status.pinned).toEqual(["llama3.2:3b", "qwen3:8b"]);
  });

  test("an embedding model is loaded as Ollama loads one (an embed with no input: an empty generate is refused for it), then unpinned", async () => {
    const res = await post("/fleet/pin", { model: "nomic-embed-text", node_id: "a", wait: true, timeout_s: 5 });
    expect([res.status, await res.json()]).toEqual([200, expect.objectContaining({ ok: true, pinned_node: "a", ready: true })]);
    expect(a.state().loaded).toContain("nomic-embed-text:latest");
    expect((await del("/fleet/pin/nomic-embed-text?node_id=a")).status).toBe(200);
  });

  test("an Ollama cloud model is a 400: it runs at ollama.com, there is nothing to load", async () => {
    const res = await post("/fleet/pin", { model: "gpt-oss:120b-cloud", node_id: "a" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe("gpt-oss:120b-cloud is an Ollama cloud model: it runs at ollama.com, not in a's memory; there is nothing to load or pin");
  });

  test("picks the node with the most free memory; a pin that cannot co-reside is a 409 with the arithmetic, and force: true overrides", async () => {
    const first = (await (await post("/fleet/pin", { model: "qwen3:32b", wait: true })).json()) as any;
    expect(first).toMatchObject({ ok: true, pinned_node: "big", ready: true }); // a reports no free memory, big 24 GB

    const refused = await post("/fleet/pin", { model: "gpt-oss:20b" });
    const body = (await refused.json()) as any;
    expect(refused.status).toBe(409);
    expect(body.error).toContain("over-commit");
    expect(body.error).toContain("26 GB (32 GB − 6 GB OS reserve)");
    expect(body.error).toMatch(/llama3\.2:3b [\d.]+ \+ qwen3:32b [\d.]+ \+ gpt-oss:20b 11\.4 = [\d.]+ GB/);
    expect(body.capacity_gb).toBe(26);
    expect(body.needed_gb).toBeGreaterThan(26);
    expect(body.pinned.map((p: any) => p.model)).toEqual(["llama3.2:3b", "qwen3:32b"]);
    expect(big.state().loaded).not.toContain("gpt-oss:20b");

    const forced = await post("/fleet/pin", { model: "gpt-oss:20b", force: true });
    expect(forced.status).toBe(200);
    expect(((await forced.json()) as any).per_node.big).toEqual(["llama3.2:3b", "qwen3:32b", "gpt-oss:20b"]);
    expect(big.state().loaded).toContain("gpt-oss:20b");
  });

  test("400 names the field, an unknown node_id lists the known nodes, 404 when no online node has it, 503 when it will not load", async () => {
    const error = async (body: unknown, status: number) => {
      const res = await post("/fleet/pin", body);
      expect(res.status).toBe(status);
      return (await res.json()) as any;
    };
    expect((await error({}, 400)).error).toBe("model: required");
    expect((await error("{not json", 400)).error).toContain("invalid JSON body");
    expect((await error({ model: "qwen3:8b", timeout_s: "30s" }, 400)).error).toContain("timeout_s: expected a number of seconds");
    expect((await error({ model: "qwen3:8b", wait: "yes" }, 400)).error).toContain("wait: expected true or false");
    const unknown = await error({ model: "qwen3:8b", node_id: "nope" }, 400);
    expect(unknown.error).toContain('unknown node_id "nope"');
    expect(unknown.known_nodes.sort()).toEqual(["a", "big"]);
    expect((await error({ model: "phi4:14b" }, 404)).error).toContain("not on disk on any online node");
    expect((await error({ model: "qwen3:8b", node_id: "big" }, 404)).error).toContain("not on disk on node big");
    expect((await error({ model: "llama3.3:70b" }, 503)).error).toContain("memory"); // 16 GB cannot hold a 70B
    expect((await pinnedModels()).per_node.a).not.toContain("llama3.3:70b");
  });

  test("ready and ready_after_ms answer only a caller that waits; a model already resident is ready at once", async () => {
    const unwaited = (await (await post("/fleet/pin", { model: "llama3.2:3b", node_id: "a" })).json()) as any;
    expect(unwaited).toMatchObject({ ok: true, pinned_node: "a" });
    expect(Object.keys(unwaited)).not.toContain("ready");
    expect(Object.keys(unwaited)).not.toContain("ready_after_ms");
    const waited = (await (await post("/fleet/pin", { model: "llama3.2:3b", node_id: "a", wait: true, timeout_s: 5 })).json()) as any;
    expect(waited).toMatchObject({ ok: true, pinned_node: "a", ready: true });
    expect(waited.ready_after_ms).toBeLessThan(2000);
  });

  test("an mlx: model is a no-op with a note", async () => {
    const body = (await (await post("/fleet/pin", { model: "mlx:mlx-community/Qwen3-4bit", wait: true })).json()) as any;
    expect(body).toMatchObject({ ok: true, pinned_node: null, ready: false });
    expect(body.note).toContain("MLX");
    expect(JSON.stringify(body.per_node)).not.toContain("mlx");
  });
});

describe("DELETE /fleet/pin/{model}", () => {
  test("takes names with / and :, answers 404 when nothing is pinned, and 409 naming the config file for config pins", async () => {
    await post("/dashboard/api/pinned-models", { node_id: "a", model: "hf.co/org/repo:Q4_K_M", pinned: true });
    expect((await pinnedModels()).per_node.a).toContain("hf.co/org/repo:Q4_K_M");

    const res = await del("/fleet/pin/hf.co/org/repo:Q4_K_M?node_id=a");
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).unpinned_from).toEqual(["a"]);
    expect((await pinnedModels()).per_node.a).not.toContain("hf.co/org/repo:Q4_K_M");
    expect((await del("/fleet/pin/hf.co/org/repo:Q4_K_M")).status).toBe(404);

    const gpt = (await (await del("/fleet/pin/gpt-oss:20b")).json()) as any;
    expect(gpt.unpinned_from).toEqual(["big"]);
    expect(gpt.per_node.big).toEqual(["llama3.2:3b", "qwen3:32b"]);

    const config = await del("/fleet/pin/llama3.2:3b");
    expect(config.status).toBe(409);
    expect(((await config.json()) as any).error).toContain(configFile);
    expect((await pinnedModels()).env_pins).toEqual(["llama3.2:3b"]);
  });
});

describe("/dashboard/api/pinned-models", () => {
  test("GET shows the config's fleet-wide pins and every node's merged pins; POST toggles, refusing vision-embedding pins", async () => {
    expect(await pinnedModels()).toEqual({
      env_pins: ["llama3.2:3b"],
      per_node: { a: ["llama3.2:3b", "qwen3:8b"], big: ["llama3.2:3b", "qwen3:32b"] },
      max_count: 3,
    });

    const toggle = async (body: unknown) => {
      const res = await post("/dashboard/api/pinned-models", body);
      return { status: res.status, body: (await res.json()) as any };
    };
    expect(await toggle({ node_id: "", model: "gemma3:4b", pinned: true })).toMatchObject({ status: 400, body: { error: expect.stringContaining("node_id") } });
    expect(await toggle({ node_id: "a", model: " ", pinned: true })).toMatchObject({ status: 400, body: { error: expect.stringContaining("model") } });
    expect(await toggle({ node_id: "a", model: "siglip-so400m", pinned: true })).toMatchObject({ status: 400, body: { error: expect.stringContaining("vision-embedding") } });
    expect(await toggle({ node_id: "a", model: "siglip-so400m", pinned: false })).toMatchObject({ status: 200, body: { ok: true } });

    const on = await toggle({ node_id: "later", model: "gemma3:4b", pinned: true });
    expect(on).toMatchObject({ status: 200, body: { ok: true } });
    expect(on.body.per_node.later).toEqual(["llama3.2:3b", "gemma3:4b"]);
    const off = await toggle({ node_id: "later", model: "gemma3:4b", pinned: false });
    expect(off.body.per_node.later).toBeUndefined();

    const kept = await toggle({ node_id: "a", model: "llama3.2:3b", pinned: false });
    expect(kept.body).toMatchObject({ ok: true, note: expect.stringContaining("config") });
    expect(kept.body.per_node.a).toContain("llama3.2:3b");
  });
});

describe("the preloader", () => {
  test("reloads pinned models a node has unloaded", async () => {
    a.patch({ loaded: [] });
    await eventually(async () => (await nodeStatus("a")).models_loaded_count === 0, 2000, "the router to see a empty");
    await eventually(async () => ["llama3.2:3b", "qwen3:8b"].every((m) => a.state().loaded!.includes(m)), 5000, "the pins reloaded on a");
    expect(a.state().loaded).not.toContain("qwen3:32b"); // on a's disk but pinned on big only
  });
});

describe("after a restart", () => {
  test("the API's pins are still there, from the same data dir", async () => {
    await router.stop();
    router = await startRouter();
    await bothOnline();
    const { per_node } = await pinnedModels();
    expect(per_node).toEqual({ a: ["llama3.2:3b", "qwen3:8b"], big: ["llama3.2:3b", "qwen3:32b"] });
    expect((await nodeStatus("big")).pinned).toEqual(["llama3.2:3b", "qwen3:32b"]);
  });
});
