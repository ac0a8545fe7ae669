// herd over nodes that run Ollama as its releases really behave (the simulated Ollama follows
// src/fleet/ollama-releases.ts): what it assumes of each node's slots and context, an embedding runner's 400, the
// memory a partly offloaded model takes, cloud models, and image models on a release that no longer draws them.
// Through a real router process; the nodes are agentless, their memory declared as an owner would.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { NEWEST_OLLAMA } from "../src/fleet/ollama-releases.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";

let current: SimNode;
let old: SimNode;
let small: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;

const nodeStatus = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const post = (path: string, body: unknown) => fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

afterAll(cleanupFile);

beforeAll(async () => {
  [current, old, small] = await Promise.all([
    // A 64 GB Mac on the newest release, with an embedding model, a cloud model and an image model on disk.
    startSimOllama({ id: "current", memoryGb: 64, models: ["llama3.2:3b", "nomic-embed-text", "gpt-oss:120b-cloud", "x/z-image-turbo"], loaded: ["llama3.2:3b", "nomic-embed-text"] }),
    // A release from before 0.9.7 (four slots by default) and 0.15.5 (4096 tokens whatever the memory).
    // Its models cold and slow to load: routing tries "current" first.
    startSimOllama({ id: "old", memoryGb: 64, models: ["llama3.2:3b", "nomic-embed-text"], ollamaVersion: "0.9.6", loadTimeMs: 1500 }),
    // A 24 GB Mac: gpt-oss:20b does not fit in Metal's working set beside what it holds, so part of it runs on the CPU.
    startSimOllama({ id: "small", memoryGb: 24, models: ["qwen3:8b", "gpt-oss:20b"], loaded: ["qwen3:8b", "gpt-oss:20b"] }),
  ]);
  const dir = tmpDir();
  const nodes = [
    `{ id: "current", ollama: "${current.url}", hardware: { memoryGb: 64 } }`,
    `{ id: "old", ollama: "${old.url}", hardware: { memoryGb: 64 } }`,
    `{ id: "small", ollama: "${small.url}", parallel: 2, contextLength: 8192 }`,
  ];
  writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [${nodes.join(", ")}], ${FAST}, features: { autoPull: false } };\n`);
  router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.filter((n: any) => n.status === "online").length === 3, 4000, "the three nodes online");
});

afterAll(async () => {
  await router?.stop();
  await Promise.all([current?.stop(), old?.stop(), small?.stop()]);
});

describe("what herd assumes of a node it is not told", () => {
  test("slots and context by its release and memory; what the config states wins", async () => {
    expect((await nodeStatus("current")).capacity).toMatchObject({ parallel: 1, default_context: 262144, sources: { parallel: "prior", default_context: "release" } });
    expect((await nodeStatus("old")).capacity).toMatchObject({ parallel: 4, default_context: 4096, sources: { parallel: "prior", default_context: "release" } });
    expect((await nodeStatus("small")).capacity).toMatchObject({ parallel: 2, default_context: 8192, sources: { parallel: "config", default_context: "config" } });
  });
});

describe("a node's answers read as its release means them", () => {
  test("an embedding runner's failure (Ollama's 400 on /api/embed) is the node's: another node serves it", async () => {
    current.setFaults({ error500: true });
    try {
      const res = await post("/api/embed", { model: "nomic-embed-text", input: "hello" });
      expect(res.status).toBe(200);
      expect([res.headers.get("x-fleet-node"), res.headers.get("x-fleet-retries")]).toEqual(["old", "1"]);
      expect(((await res.json()) as any).embeddings).toHaveLength(1);
    } finally {
      current.setFaults({});
    }
    // The fault failed herd's polls of the node too: it serves again once a poll reaches it.
    await eventually(async () => (await nodeStatus("current")).ollama?.reachable === true, 3000, "current reachable again");
    // A 400 about the request itself is the client's, from the first node.
    const bad = await post("/api/embed", { model: "nomic-embed-text", input: [1, 2] });
    expect(bad.status).toBe(400);
  });

  test("a partly offloaded model takes its whole size on the Mac, not only its GPU part (/api/ps size, not size_vram)", async () => {
    const ps = ((await getJson(`${small.url}/api/ps`)) as { models: any[] }).models.find((m) => m.name === "gpt-oss:20b");
    expect(ps.size_vram).toBeLessThan(ps.size);
    const seen = (await nodeStatus("small")).ollama.models_loaded.find((m: any) => m.name === "gpt-oss:20b");
    expect(seen.size_gb).toBe(Math.round((ps.size / 1024 ** 3) * 10) / 10);
  });
});

describe("models that are not local weights", () => {
  test("a cloud model is served through the node that lists it (its Ollama forwards it), never loaded there", async () => {
    const res = await post("/api/chat", { model: "gpt-oss:120b-cloud", stream: false, messages: [{ role: "user", content: "hi" }] });
    expect([res.status, res.headers.get("x-fleet-node")]).toEqual([200, "current"]);
    const breakdown = Object.fromEntries(res.headers.get("x-fleet-prediction-breakdown")!.split("; ").map((p) => p.split("=")));
    expect(breakdown.load_ms).toBe("0");
    expect(current.state().counters.loads ?? 0).toBe(0);
  });

  test(`an x/ image model on a node whose Ollama is ${NEWEST_OLLAMA} (image generation removed in 0.32.6) is not offered, and a request says why`, async () => {
    expect((await getJson(`${router.url}/api/image-models`)).models).toEqual([]);
    const res = await post("/api/generate-image", { model: "x/z-image-turbo:latest", prompt: "a fox" });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error).toContain(`is on current (Ollama ${NEWEST_OLLAMA}), but Ollama generates images only from 0.14.3 until 0.32.6`);
  });
});
