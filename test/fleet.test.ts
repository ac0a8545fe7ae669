// Nodes joining, reporting and going away, seen through /fleet/status, the
// Ollama routes and the SQLite file, with real router and agent processes.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { migrations } from "../src/store/migrations.ts";
import { eventually, getJson, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

// Fast heartbeats so status transitions happen within a test's time.
const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";

async function sim(id: string, port = 0): Promise<SimNode> {
  return startSimOllama({ id, port, models: ["llama3.2:3b", "qwen3:8b"], loaded: ["llama3.2:3b"], memoryGb: 16 });
}

function fleetConfig(nodes: string, extra = FAST) {
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [${nodes}], ${extra} };\n`);
  return { dir, file };
}

async function router(dir: string, file: string) {
  return startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
}

const nodeOf = async (url: string, id: string) => (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const statusOf = async (url: string, id: string) => (await nodeOf(url, id))?.status;

describe("agentless nodes (the router polls their Ollama)", () => {
  test("come online with their models, go degraded then offline when Ollama stops, and come back", async () => {
    let node = await sim("s1");
    const { dir, file } = fleetConfig(`{ id: "s1", ollama: "${node.url}" }`);
    const r = await router(dir, file);
    const online = await eventually(async () => {
      const n = await nodeOf(r.url, "s1");
      return n?.status === "online" && n;
    }, 3000, "s1 online");
    expect(online).toMatchObject({ source: "poll", declared: true, ollama_url: node.url, models_loaded_count: 1 });
    expect(online.ollama.models_loaded.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);
    // Seed 000's shape: the models on disk by name; beside them, each one's /api/tags entry as the node listed it.
    expect(online.ollama.models_available.sort()).toEqual(["llama3.2:3b", "qwen3:8b"]);
    expect(online.ollama.models_available_details).toEqual((await getJson(`${node.url}/api/tags`)).models);
    const fleet = (await getJson(`${r.url}/fleet/status`)).fleet;
    expect(fleet).toMatchObject({ nodes_total: 1, nodes_online: 1, models_loaded: 1 });

    const port = node.port;
    await node.stop();
    await eventually(async () => (await statusOf(r.url, "s1")) === "degraded", 3000, "s1 degraded");
    const offline = await eventually(async () => {
      const n = await nodeOf(r.url, "s1");
      return n?.status === "offline" && n;
    }, 3000, "s1 offline");
    expect(offline.status_reason).toMatch(/no answer for \d+ s; Ollama at .*: connection refused/);
    const version = await fetch(`${r.url}/api/version`);
    expect([version.status, await version.json()]).toEqual([503, { error: "no online node reports an Ollama version: no node is online" }]);
    await r.waitFor(/node s1: online → degraded/);
    await r.waitFor(/node s1: degraded → offline/);

    node = await sim("s1", port);
    await eventually(async () => (await statusOf(r.url, "s1")) === "online", 3000, "s1 back online");
    await node.stop();
  });

  test("the Ollama routes reach the fleet: the official client chats through the router", async () => {
    const [a, b] = [await sim("a"), await startSimOllama({ id: "b", models: ["gemma3:4b"], loaded: [] })];
    const { dir, file } = fleetConfig(`{ id: "a", ollama: "${a.url}" }, { id: "b", ollama: "${b.url}" }`);
    const r = await router(dir, file);
    await eventually(async () => (await getJson(`${r.url}/fleet/status`)).fleet.nodes_online === 2, 3000, "both online");
    const client = new Ollama({ host: r.url });

    const tags = await client.list();
    const byName = Object.fromEntries(tags.models.map((m: any) => [m.name, m.details.fleet_nodes]));
    expect(byName).toEqual({ "llama3.2:3b": ["a"], "qwen3:8b": ["a"], "gemma3:4b": ["b"] });

    let text = "";
    let final: any;
    for await (const part of await client.chat({ model: "gemma3:4b", messages: [{ role: "user", content: "hi" }], stream: true })) {
      text += part.message.content;
      if (part.done) final = part;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(final.eval_count).toBeGreaterThan(0);

    const res = await fetch(`${r.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "qwen3:8b", prompt: "why", stream: false }) });
    expect(res.headers.get("x-fleet-node")).toBe("a");
    expect(res.headers.get("x-fleet-backend")).toBe("ollama");
    expect(((await res.json()) as any).done).toBe(true);

    const missing = await fetch(`${r.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "nope:1b", messages: [] }) });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error).toContain(`model "nope:1b" not found on any node`);
    const noModel = await fetch(`${r.url}/api/chat`, { method: "POST", body: "{}" });
    expect(noModel.status).toBe(400);
    expect(((await noModel.json()) as any).error).toBe("model is required");
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe("an Ollama client's request", () => {
  test("reaches the node with every field herd does not model, on the body and on its messages; a field herd reads that is wrong is a 400 naming it", async () => {
    const received: any[] = [];
    const fake = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/api/version") return Response.json({ version: "0.13.5" });
        if (path === "/api/ps") return Response.json({ models: [] });
        if (path === "/api/tags") return Response.json({ models: [{ name: "llama3.2:3b", size: 2_000_000_000 }] });
        // herd asks once what the model is (its trained context, its blob): not the request relayed.
        if (path === "/api/show") return Response.json({ capabilities: ["completion"], model_info: {} });
        received.push(await req.json());
        return new Response(`${JSON.stringify({ model: "llama3.2:3b", message: { role: "assistant", content: "ok" }, done: true, done_reason: "stop" })}\n`);
      },
    });
    const { dir, file } = fleetConfig(`{ id: "f", ollama: "http://127.0.0.1:${fake.port}" }`);
    const r = await router(dir, file);
    await eventually(async () => (await nodeOf(r.url, "f"))?.ollama?.reachable, 3000, "f polled");
    const chat = (body: Record<string, unknown>) => fetch(`${r.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", ...body }) });

    const sent = {
      messages: [{ role: "user", content: "hi", images: ["iVBO"], future_field: 1 }],
      tools: [{ type: "function", function: { name: "read", description: "reads", parameters: { type: "object" } } }],
      options: { temperature: 0, mirostat: 2 },
      think: false,
      format: "json",
      keep_alive: "1m",
      stream: false,
      truncate: true,
      metadata: { tags: ["herd-app"] },
    };
    const ok = await chat(sent);
    expect(ok.status).toBe(200);
    const { metadata: _, ...expected } = sent; // herd's own field stays with herd
    expect(received[0]).toMatchObject({ ...expected, model: "llama3.2:3b" });
    expect(received[0]).not.toHaveProperty("metadata");

    for (const [body, error] of [
      [{ messages: [{ content: "hi" }] }, "messages[0].role: expected a string"],
      [{ messages: ["hi"] }, "messages[0]: expected a message object"],
      [{ messages: [{ role: "user", content: ["hi"] }] }, "messages[0].content: expected a string"],
      [{ messages: [{ role: "user", content: "", images: [1] }] }, "messages[0].images: expected a list of base64 strings"],
      [{ messages: [], tools: [{ type: "function" }] }, "tools[0].function.name: expected a string"],
      [{ messages: [], options: { num_predict: "100" } }, "options.num_predict: expected a number"],
      [{ messages: [], think: 1 }, 'think: expected true, false or a level ("low", "medium", "high")'],
    ] as const) {
      const res = await chat(body);
      expect([res.status, ((await res.json()) as any).error]).toEqual([400, error]);
    }
    expect(received).toHaveLength(1);
    await fake.stop(true);
  });
});

describe("what a node lists is bounded", () => {
  test("an Ollama listing an entry too long to keep is polled as unreachable, with the reason", async () => {
    const fake = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/api/version") return Response.json({ version: "0.13.5" });
        if (path === "/api/ps") return Response.json({ models: [] });
        return Response.json({ models: [{ name: "big:1b", notes: "x".repeat(5000) }] });
      },
    });
    const { dir, file } = fleetConfig(`{ id: "f", ollama: "http://127.0.0.1:${fake.port}" }`);
    const r = await router(dir, file);
    const polled = await eventually(async () => (await nodeOf(r.url, "f"))?.ollama, 3000, "f polled");
    expect(polled).toMatchObject({ reachable: false, error: "unexpected answer from /api/tags: models[0]: an entry longer than 4096 characters, got Object" });
    await fake.stop(true);
  });
});

describe("agent nodes (herd node sends heartbeats)", () => {
  test("an agent reports its machine and its Ollama; draining follows the config; a dead agent goes offline", async () => {
    const node = await sim("local");
    // An undeclared node joins with the fleet's node credential.
    const { dir, file } = fleetConfig("", `${FAST}, auth: { nodeToken: "fleet-token" }`);
    const r = await router(dir, file);
    const agent = spawnHerd(["node", "--router", r.url, "--ollama", node.url, "--node-id", "mac-1", "--config", file], { env: { HERD_NODE_TOKEN: "fleet-token" } });
    await agent.waitFor(/node mac-1 has no entry in the config; running with defaults/);
    const joined = await eventually(async () => {
      const n = await nodeOf(r.url, "mac-1");
      return n?.status === "online" && n;
    }, 3000, "mac-1 online");
    expect(joined).toMatchObject({ source: "agent", declared: false, draining: false, agent_version: expect.any(String), ollama_url: node.url });
    expect(joined.hardware).toMatchObject({ memory_total_gb: expect.any(Number), cores_physical: expect.any(Number), chip: expect.any(String) });
    expect(joined.memory.available_gb).toBeLessThanOrEqual(joined.memory.total_gb);
    expect(["nominal", "warning", "critical"]).toContain(joined.memory.pressure);
    expect(joined.ollama.models_loaded.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);
    expect(joined.ollama.models_available.sort()).toEqual(["llama3.2:3b", "qwen3:8b"]);
    expect(joined.ollama.models_available_details).toEqual((await getJson(`${node.url}/api/tags`)).models);

    // The same file, edited: the node gets an entry and is drained; router and agent both follow.
    writeFileSync(file, `export default { nodes: [{ id: "mac-1", ollama: "${node.url}", draining: true, labels: { room: "den" } }], ${FAST} };\n`);
    const drained = await eventually(async () => {
      const n = await nodeOf(r.url, "mac-1");
      return n?.draining && n;
    }, 3000, "mac-1 draining");
    expect(drained.labels).toEqual({ room: "den" });
    expect(drained.source).toBe("agent");

    // The agent dies: the node is declared with an Ollama URL, so the router falls back to polling it.
    await agent.stop("SIGKILL");
    await eventually(async () => (await nodeOf(r.url, "mac-1"))?.source === "poll", 4000, "mac-1 polled");
    expect(await statusOf(r.url, "mac-1")).toBe("online");
    await node.stop();
    await eventually(async () => (await statusOf(r.url, "mac-1")) === "offline", 4000, "mac-1 offline");
  });

  test("a heartbeat with a wrong field is refused with 400 naming the field", async () => {
    const { dir, file } = fleetConfig(`{ id: "x" }`);
    const r = await router(dir, file);
    const post = (body: string) => fetch(`${r.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const bad = await post(JSON.stringify({ node_id: "x", memory: { total_gb: "lots", used_gb: 1, available_gb: 1, pressure: "nominal" } }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toContain(`memory.total_gb: expected a number, got "lots"`);
    const noId = await post(JSON.stringify({ cpu: { cores_physical: 1, utilization_pct: 1 } }));
    expect(((await noId.json()) as any).error).toContain("node_id: required");
    // A model's entry is kept whole (for /api/tags), so it is bounded: no blob rides in on a heartbeat.
    const blob = await post(JSON.stringify({ node_id: "x", ollama: { models_available: ["ok:1b", { name: "big:1b", notes: "x".repeat(5000) }] } }));
    expect([blob.status, ((await blob.json()) as any).error]).toEqual([400, "invalid heartbeat: ollama.models_available[1]: an entry longer than 4096 characters, got Object"]);
    const size = await post(JSON.stringify({ node_id: "x", ollama: { models_loaded: [{ name: "m:1b", size: "huge" }] } }));
    expect(((await size.json()) as any).error).toContain(`ollama.models_loaded[0].size: expected a number, got "huge"`);
    // Sizes are bounded too: a thousand of them must add up to a figure routing can subtract from.
    const vast = await post(JSON.stringify({ node_id: "x", ollama: { models_loaded: [{ name: "m:1b", size_gb: 1e300 }] } }));
    expect([vast.status, ((await vast.json()) as any).error]).toEqual([400, expect.stringContaining("ollama.models_loaded[0].size_gb: ")]);
    const bytes = await post(JSON.stringify({ node_id: "x", ollama: { models_loaded: [{ name: "m:1b", size: 1e300 }] } }));
    expect([bytes.status, ((await bytes.json()) as any).error]).toEqual([400, expect.stringContaining("ollama.models_loaded[0].size: ")]);
    const ok = await post(JSON.stringify({ node_id: "x" }));
    expect(await ok.json()).toEqual({ status: "ok", node_status: "online" });
    expect((await post("{not json")).status).toBe(400);
  });
});

describe("the store", () => {
  test("is one SQLite file in WAL mode with numbered migrations, reopened intact after a restart", async () => {
    const node = await sim("s");
    const { dir, file } = fleetConfig(`{ id: "s", ollama: "${node.url}" }`);
    const first = await router(dir, file);
    await eventually(async () => (await statusOf(first.url, "s")) === "online", 3000, "s online");
    expect(await first.stop()).toBe(0);

    const path = join(dir, "data", "herd.sqlite");
    const read = () => {
      const db = new Database(path, { readonly: true });
      try {
        return {
          mode: (db.query("PRAGMA journal_mode").get() as any).journal_mode,
          versions: db.query("SELECT version FROM schema_migrations ORDER BY version").all(),
          events: db.query("SELECT node_id, status FROM node_events ORDER BY id").all(),
          configs: (db.query("SELECT COUNT(*) AS n FROM config_events").get() as any).n,
        };
      } finally {
        db.close();
      }
    };
    const before = read();
    expect(before.mode).toBe("wal");
    expect(before.versions).toEqual(migrations.map((m) => ({ version: m.version })));
    expect(before.versions[0]).toEqual({ version: 1 });
    expect(before.events).toContainEqual({ node_id: "s", status: "online" });

    const second = await router(dir, file);
    await eventually(async () => (await statusOf(second.url, "s")) === "online", 3000, "s online again");
    await second.stop();
    const after = read();
    expect(after.versions).toEqual(before.versions);
    expect(after.events.slice(0, before.events.length)).toEqual(before.events);
    expect(after.events.length).toBeGreaterThan(before.events.length);
    expect(after.configs).toBe(before.configs + 1);
    await node.stop();
  });
});

describe("an agent whose heartbeats stop", () => {
  test("once the router polls the node again, its view and routing drop the agent's report for the config and the poll; each figure says where it came from", async () => {
    const node = await sim("den");
    const { dir, file } = fleetConfig(`{ id: "den", ollama: "${node.url}", hardware: { memoryGb: 64, chip: "Apple M2 Max" } }`, `${FAST}, auth: { nodeToken: "fleet-token" }`);
    const r = await router(dir, file);
    // The agent says the machine has 4 GB: too small for qwen3:8b (5 GB) after the OS's share.
    const beat = await fetch(`${r.url}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer fleet-token" },
      body: JSON.stringify({
        node_id: "den",
        ollama_url: node.url,
        memory: { total_gb: 4, used_gb: 3, available_gb: 1, pressure: "warning" },
        hardware: { memory_total_gb: 4, cores_physical: 4, chip: "Apple M1", memory_bandwidth_gbps: 68, arch: "apple_silicon" },
        ollama: { models_available: [{ name: "qwen3:8b", size: 5.2e9 }, { name: "llama3.2:3b", size: 2e9 }] },
      }),
    });
    expect(beat.status).toBe(200);
    expect(await nodeOf(r.url, "den")).toMatchObject({ source: "agent", memory: { total_gb: 4 }, hardware: { chip: "Apple M1" }, sources: { hardware: "agent", memory: "agent", ollama: "agent" } });
    const ask = () => fetch(`${r.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "qwen3:8b", prompt: "hi", stream: false }) });
    const refused = await ask();
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as any).error).toContain("qwen3:8b on den (model needs 4.8 GB; node has 4 GB less a 6 GB OS reserve)");
    // Silent past heartbeat.offlineMs, the node is polled again: the agent's machine is gone from its view and from routing.
    const polled = await eventually(async () => {
      const n = await nodeOf(r.url, "den");
      return n?.source === "poll" && n.status === "online" && n;
    }, 5000, "den polled again");
    expect(polled).toMatchObject({ memory: null, cpu: null, hardware: { memory_total_gb: 64, chip: "Apple M2 Max", source: "config" } });
    expect(polled.sources).toEqual({ hardware: "config", memory: null, cpu: null, disk: null, ollama: "poll" });
    const res = await ask();
    expect([res.status, res.headers.get("x-fleet-node")]).toEqual([200, "den"]);
    await res.json();
    await r.stop();
    await node.stop();
  });
});

describe("an agent stopped with SIGTERM says goodbye", () => {
  test("the router drops its report at once (offline, or polled again when the config gives its Ollama) and logs the join and the leave", async () => {
    const node = await sim("den");
    // mac-1's own Ollama: on den's, its agent would report as den (the config's entry for that Ollama).
    const other = await sim("mac-1");
    // Slow timeouts: without a goodbye the node would stay online for 15 s.
    const SLOW = `heartbeat: { intervalMs: 300, timeoutMs: 15000, offlineMs: 30000 }, auth: { nodeToken: "fleet-token" }`;
    const { dir, file } = fleetConfig(`{ id: "den", ollama: "${node.url}" }`, SLOW);
    const r = await router(dir, file);
    const agent = (id: string) =>
      spawnHerd(["node", "--router", r.url, "--ollama", (id === "den" ? node : other).url, "--node-id", id, "--config", file, "--data-dir", join(dir, `agent-${id}`)], { env: { HERD_NODE_TOKEN: "fleet-token" } });
    for (const id of ["mac-1", "den"]) {
      const a = agent(id);
      await eventually(async () => (await nodeOf(r.url, id))?.source === "agent", 5000, `${id} reporting as an agent`);
      await r.waitFor(new RegExp(`node ${id}: agent \\S+ joined from 127\\.0\\.0\\.1`));
      expect(await a.stop("SIGTERM")).toBe(0);
      await r.waitFor(new RegExp(`node ${id}: agent left \\(stopped\\)`), 2000);
    }
    // Undeclared: nothing else reports for it.
    expect(await nodeOf(r.url, "mac-1")).toMatchObject({ status: "offline", status_reason: "its agent stopped", excluded: "offline" });
    expect((await nodeOf(r.url, "mac-1")).ollama).toBeNull();
    // Declared with an Ollama URL: the router polls it again.
    await eventually(async () => {
      const n = await nodeOf(r.url, "den");
      return n?.status === "online" && n.source === "poll";
    }, 3000, "den polled again");
    await r.stop();
    await Promise.all([node.stop(), other.stop()]);
  });
});

describe("queue latency", () => {
  test("the average /fleet/status shows is measured: a fast answer shows as fast, not as a 5 s prior", async () => {
    const node = await sim("quick");
    const { dir, file } = fleetConfig(`{ id: "quick", ollama: "${node.url}" }`);
    const r = await router(dir, file);
    await eventually(async () => (await statusOf(r.url, "quick")) === "online", 3000, "quick online");
    const started = performance.now();
    const res = await fetch(`${r.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false }) });
    expect(res.status).toBe(200);
    await res.json();
    const wall = performance.now() - started;
    const queue = (await getJson(`${r.url}/fleet/status`)).queues["quick:llama3.2:3b"];
    expect(queue.completed).toBe(1);
    expect(queue.avg_latency_ms).toBeGreaterThan(0);
    expect(queue.avg_latency_ms).toBeLessThanOrEqual(wall);
    await r.stop();
    await node.stop();
  });
});
