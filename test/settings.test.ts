// GET/POST /dashboard/api/settings through a real router: the config grouped by
// category with secrets masked, the live config's source, the nodes, and the two
// runtime toggles changing what the router does to the next request.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { LiveConfig } from "../src/config/live.ts";
import { postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const SECRET = "sk-herd-test-9f8e7d6c5b4a";
const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };

const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

async function router(node: SimNodeOptions, extra = "") {
  const sim = await startSimOllama(node);
  sims.push(sim);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const write = (more: string) =>
    writeFileSync(file, `export default { nodes: [{ id: "${node.id}", ollama: "${sim.url}" }], heartbeat: ${JSON.stringify(FAST)}, ${extra} ${more} };\n`);
  write("");
  const r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${r.url}/fleet/status`)).nodes[0]?.status === "online", 3000, "the node online");
  return { url: r.url, sim, file, write };
}

const settings = (url: string) => getJson(`${url}/dashboard/api/settings`);
const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
const chat = (url: string, model: string) => post(url, "/api/chat", { model, messages: [{ role: "user", content: "hi" }], stream: false });

describe("GET /dashboard/api/settings", () => {
  test("the config by category (seed names, herd's sections), a masked API key, the config's source and the nodes", async () => {
    const { url, sim, file } = await router({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }, `anthropic: { apiKey: "${SECRET}" }, modelMap: { "claude-*": "llama3.2:3b" },`);
    const res = await fetch(`${url}/dashboard/api/settings`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(SECRET.slice(-6));
    const body = JSON.parse(text);

    expect(body.router_version).toBe(pkg.version);
    expect(body.router_hostname).toBe(hostname());
    const c = body.config;
    expect(c.toggles).toEqual({ auto_pull: true, vram_fallback: true });
    expect(c.server).toEqual({ host: "127.0.0.1", port: 0, data_dir: expect.stringContaining("data"), max_retries: 2, shutdown_grace_ms: 10000, max_body_mb: 16, max_media_body_mb: 64, client_max_pending_bodies: 32, client_max_connections: 64, keep_alive_ms: 10000, max_node_line_mb: 16, max_node_answer_mb: 64, idle_shrink_ms: 60000 });
    expect(c.heartbeat).toEqual({ heartbeat_interval: 0.2, heartbeat_timeout: 0.7, heartbeat_offline: 1.4 });
    expect(c.scoring).toMatchObject({ score_model_hot: 50, score_model_warm: 30, score_model_cold: 10, weights_queue_depth: -30 });
    expect(c.rebalancer).toEqual({ rebalance_interval: 5, rebalance_threshold: 4, rebalance_max_per_cycle: 3 });
    expect(c.pre_warm).toEqual({ pre_warm_threshold: 3, pre_warm_min_availability: 0.6 });
    expect(c.auto_pull_config).toEqual({ auto_pull_timeout: 300 });
    expect(c.context_protection).toEqual({ context_protection: "strip" });
    // herd's own sections, in herd's names (snake_case), unset optional settings as null.
    expect(c.timeouts).toMatchObject({ connect_ms: 5000, first_byte_ms: 300000 });
    expect(c.routing).toMatchObject({ strategy: "finish-time", client_max_in_flight: 0 });
    expect(c.features).toMatchObject({ image_generation: true, transcription: true });
    expect(c.features.auto_pull).toBeUndefined(); // shown once, under toggles
    expect(c.anthropic).toMatchObject({ auto_route: true, max_prompt_tokens: 180000, vision_model: null, api_key: "••••" });
    expect(c.mlx).toMatchObject({ max_queue_depth: 10 });
    expect(c.preloader).toEqual({ enabled: true, max_count: 3 });
    expect(c.telemetry).toEqual({ local_summary: false, include_tags: false, otlp_endpoint: null, otlp_headers: null, otlp_service_name: null, otlp_traces: null, otlp_metrics: null, otlp_interval_ms: null });
    expect(c.model_map).toEqual({ "claude-*": "llama3.2:3b" });
    expect(c.pins).toEqual({});

    const sha = createHash("sha256").update(readFileSync(file)).digest("hex").slice(0, 12);
    expect(body.config_source).toEqual({ path: file, hash: sha, loaded_at: expect.any(Number), last_error: null });
    expect(body.config_source.hash).toBe((await getJson(`${url}/fleet/status`)).config.hash);
    expect(body.nodes).toEqual([{ node_id: "n", status: "online", agent_version: null, config_hash: null, config_error: null, version_drift: false, config_drift: false, ip: sim.url, models_loaded_count: 1, is_router: false }]);
  });

  test("a broken edit shows under config_source.last_error, the last good hash kept", async () => {
    const { url, file } = await router({ id: "n" });
    const good = (await settings(url)).config_source.hash;
    writeFileSync(file, "export default { server: { prot: 1 } };\n");
    const source = await eventually(async () => {
      const s = (await settings(url)).config_source;
      return s.last_error && s;
    }, 5000, "the reload error");
    expect(source.hash).toBe(good);
    expect(source.last_error.message).toContain('server.prot: unknown key; did you mean "port"?');
  });
});

describe("POST /dashboard/api/settings", () => {
  test("auto_pull off: a model on no node's disk is a 404, nothing pulled; a config reload keeps the flip; on again: it is pulled", async () => {
    const { url, sim, write } = await router({ id: "n", models: ["llama3.2:3b"], loaded: [] });
    const off = await post(url, "/dashboard/api/settings", { auto_pull: false, max_retries: 9, context_protection: "warn" });
    expect(off.status).toBe(200);
    expect(await off.json()).toEqual({ status: "updated", updated: { auto_pull: false } });
    const after = await settings(url);
    expect(after.config.toggles).toEqual({ auto_pull: false, vram_fallback: true });
    expect(after.config.server.max_retries).toBe(2); // every other field is ignored
    expect(after.config.context_protection.context_protection).toBe("strip");

    const missing = await chat(url, "qwen3:8b");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error).not.toContain("auto-pull");
    expect(sim.state().models).not.toContain("qwen3:8b");

    // An edit of the file (a new hash) does not undo a flip made at runtime.
    const before = after.config_source.hash;
    write("routing: { maxRetries: 3 },");
    const reloaded = await eventually(async () => {
      const s = await settings(url);
      return s.config_source.hash !== before && s;
    }, 5000, "the reload");
    expect(reloaded.config.server.max_retries).toBe(3);
    expect(reloaded.config.toggles.auto_pull).toBe(false);
    expect((await chat(url, "qwen3:8b")).status).toBe(404);

    expect(await (await post(url, "/dashboard/api/settings", { auto_pull: true })).json()).toEqual({ status: "updated", updated: { auto_pull: true } });
    const pulled = await chat(url, "qwen3:8b");
    expect(pulled.status).toBe(200);
    expect(pulled.headers.get("x-fleet-served-model")).toBe("qwen3:8b");
    expect(sim.state().models).toContain("qwen3:8b");
  });

  test("vram_fallback off: a cold model that cannot fit is loaded as asked instead of served by a loaded stand-in", async () => {
    // A real agent reports the simulated Mac's memory, with a credential (herd takes a polled node's memory from no
    // other heartbeat): the fallback needs to know qwen3:32b cannot fit.
    const { url, sim } = await router(
      {
        id: "mac",
        memoryGb: 32,
        models: ["qwen3:32b", "qwen3:8b", "llama3.2:3b", "gemma3:12b"],
        loaded: ["qwen3:8b", "llama3.2:3b", "gemma3:12b"],
      },
      `auth: { nodeToken: "settings-node-token" },`,
    );
    const live = await LiveConfig.open(null, (c) => ({ ...c, heartbeat: FAST }));
    const agent = startAgent({ nodeId: "mac", live, ollamaUrl: sim.url, send: postTo(url, 1000, () => "settings-node-token"), collector: simCollector(sim, { chip: "Apple M2 Pro", memoryBandwidthGbps: 200 }) });
    try {
      await agent.beat();
      await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes[0]?.memory, 3000, "the agent's memory report");
      const standIn = await chat(url, "qwen3:32b");
      expect(standIn.headers.get("x-fleet-fallback")).toBe("true");
      expect(standIn.headers.get("x-fleet-served-model")).toBe("qwen3:8b");
      await standIn.json();

      expect(await (await post(url, "/dashboard/api/settings", { vram_fallback: false })).json()).toEqual({ status: "updated", updated: { vram_fallback: false } });
      const asked = await chat(url, "qwen3:32b");
      expect(asked.status).toBe(200);
      expect(asked.headers.get("x-fleet-fallback")).toBe("false");
      expect(asked.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
      await asked.json();
      expect((await settings(url)).config.toggles.vram_fallback).toBe(false);
    } finally {
      agent.stop();
    }
  });

  test("a value that is not a boolean is a 400 naming the field, and changes nothing; unknown fields alone change nothing", async () => {
    const { url } = await router({ id: "n" });
    for (const [body, field] of [
      [{ auto_pull: "false" }, "auto_pull"],
      [{ vram_fallback: 0, auto_pull: false }, "vram_fallback"],
      [{ auto_pull: null }, "auto_pull"],
    ] as const) {
      const res = await post(url, "/dashboard/api/settings", body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toStartWith(`${field}: expected true or false`);
    }
    expect((await post(url, "/dashboard/api/settings", "{not json")).status).toBe(400);
    expect((await post(url, "/dashboard/api/settings", "[true]")).status).toBe(400);
    expect(await (await post(url, "/dashboard/api/settings", { host: "0.0.0.0", anything: true })).json()).toEqual({ status: "updated", updated: {} });
    expect((await settings(url)).config.toggles).toEqual({ auto_pull: true, vram_fallback: true });
  });
});
