// The model mix: GET /dashboard/api/recommendations and model-management, POST
// pull and delete, through a real router over two simulated Macs of different
// memory (64 GB and 16 GB), each reported by the real node agent. The agents beat
// only when a test asks, so the router's view changes only through the routes
// under test. Tests share the fleet, in order. The pure recommender and the
// inventory are also tested on hand-built fleets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveConfig } from "../src/config/live.ts";
import { CATEGORIES, MODEL_CATALOG, qualityScore } from "../src/fleet/model-catalog.ts";
import { modelInventory } from "../src/fleet/model-inventory.ts";
import { BIG_MODEL_GB, recommend, type SnapshotNode } from "../src/fleet/recommender.ts";
import { type AgentHandle, postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

// Heartbeats never go stale during the file, and agents beat only on request, with their node credential (so the
// router believes what they say the nodes hold, between its own rare polls).
const NODE_TOKEN = "recommendations-node-token";
const HEARTBEAT = { intervalMs: 600_000, timeoutMs: 1_200_000, offlineMs: 1_800_000 };

let big: SimNode;
let small: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let agents: AgentHandle[] = [];

const post = (path: string, body: unknown) =>
  fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
const recommendations = (query = "") => getJson(`${router.url}/dashboard/api/recommendations${query}`);
const management = () => getJson(`${router.url}/dashboard/api/model-management`);
const simModels = async (node: SimNode) => (await getJson(`${node.url}/_sim`)).models as string[];
const routerTags = async () => ((await getJson(`${router.url}/api/tags`)).models as { name: string }[]).map((m) => m.name);
const beat = () => Promise.all(agents.map((a) => a.beat()));

afterAll(cleanupFile);

beforeAll(async () => {
  [big, small] = await Promise.all([
    startSimOllama({ id: "big", memoryGb: 64, models: ["qwen3:32b", "llama3.2:3b", "nomic-embed-text"] }),
    startSimOllama({ id: "small", memoryGb: 16, models: ["qwen3:8b", "llama3.2:3b", "llama3.2:1b"] }),
  ]);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const nodes = [big, small].map((n) => ({ id: n.id, ollama: n.url }));
  writeFileSync(file, `export default { nodes: ${JSON.stringify(nodes)}, heartbeat: ${JSON.stringify(HEARTBEAT)}, auth: { nodeToken: "${NODE_TOKEN}" } };\n`);
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  const live = await LiveConfig.open(null, (c) => ({ ...c, heartbeat: HEARTBEAT }));
  agents = [big, small].map((sim) =>
    startAgent({ nodeId: sim.id, live, ollamaUrl: sim.url, send: postTo(router.url, 1000, () => NODE_TOKEN), collector: simCollector(sim, { chip: "Apple M2", memoryBandwidthGbps: 100 }) }),
  );
  await beat();
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.source === "agent" && n.memory), 3000, "both agents' reports");
});

afterAll(async () => {
  for (const a of agents) a.stop();
  await router?.stop();
  await Promise.all([big?.stop(), small?.stop()]);
});

describe("GET /dashboard/api/recommendations", () => {
  let first: any;

  test("each node's picks fit its RAM less 6 GB, no model takes over half of it, and models on disk are flagged", async () => {
    first = await recommendations();
    expect(first.nodes.map((n: any) => [n.node_id, n.total_ram_gb, n.usable_ram_gb])).toEqual([
      ["big", 64, 58],
      ["small", 16, 10],
    ]);
    for (const node of first.nodes) {
      const onDisk = await simModels(node.node_id === "big" ? big : small);
      expect(node.recommendations.length).toBeGreaterThan(2);
      const sum = node.recommendations.reduce((s: number, r: any) => s + r.ram_gb, 0);
      expect(node.total_recommended_ram_gb).toBeCloseTo(sum, 5);
      expect(sum).toBeLessThanOrEqual(node.usable_ram_gb);
      expect(node.ram_headroom_gb).toBeCloseTo(node.usable_ram_gb - sum, 5);
      for (const r of node.recommendations) {
        expect(r.ram_gb).toBeLessThanOrEqual(node.usable_ram_gb / 2);
        expect(r.already_available).toBe(onDisk.includes(r.model));
        expect(CATEGORIES).toContain(r.category);
        expect(["high", "medium", "low"]).toContain(r.priority);
        expect(r.reason).toBeString();
      }
      expect(node.current_models.sort()).toEqual([...onDisk].sort());
    }
    // The 64 GB Mac already holds a strong reasoning model and an embedder: both are kept.
    const bigPicks = first.nodes[0].recommendations.filter((r: any) => r.already_available).map((r: any) => r.model);
    expect(bigPicks).toEqual(expect.arrayContaining(["qwen3:32b", "nomic-embed-text:latest"]));
    expect(first.usage.total_requests_24h).toBe(0);
    expect(first.fleet_summary).toStartWith("2 node(s), 80GB total RAM, ");
    expect(first.generated_at).toBeGreaterThan(Date.now() / 1000 - 60);
  });

  test("the answer is cached; refresh=1 recomputes it with the last 24 h of requests", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await post("/api/chat", { model: "llama3.2:1b", messages: [{ role: "user", content: `hi ${i}` }], stream: false });
      expect(res.status).toBe(200);
      await res.json();
    }
    const cached = await recommendations();
    expect(cached.generated_at).toBe(first.generated_at);
    expect(cached.usage.total_requests_24h).toBe(0);

    // Traces reach the store in batches: wait for them.
    const fresh = await eventually(async () => {
      const r = await recommendations("?refresh=1");
      return r.usage.total_requests_24h === 3 && r;
    }, 3000, "the three requests in the recommendations");
    expect(fresh.generated_at).toBeGreaterThan(first.generated_at);
    expect(fresh.usage.category_breakdown).toEqual({ "fast-chat": 3 });
    expect(fresh.usage.top_models).toEqual([{ model: "llama3.2:1b", requests: 3, category: "fast-chat" }]);
    const kept = fresh.nodes.find((n: any) => n.node_id === "small").recommendations.find((r: any) => r.model === "llama3.2:1b");
    expect(kept).toMatchObject({ priority: "high", already_available: true });
    expect(kept.reason).toContain("3 requests in 24h");
    expect((await recommendations()).generated_at).toBe(fresh.generated_at);
  });

  test("refresh other than 0 or 1 is a 400 that names it", async () => {
    const res = await fetch(`${router.url}/dashboard/api/recommendations?refresh=yes`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("refresh");
  });
});

describe("GET /dashboard/api/model-management", () => {
  test("loaded models first, then the most recently used, then by name; never-used models are flagged unused", async () => {
    await beat(); // the agents report llama3.2:1b resident after the chats
    const small$ = (await management()).nodes.find((n: any) => n.node_id === "small");
    expect(small$.models.map((m: any) => m.name)).toEqual(["llama3.2:1b", "llama3.2:3b", "qwen3:8b"]);
    const [used, idle, other] = small$.models;
    expect(used).toMatchObject({ display_name: "Llama 3.2 1B", category: "fast-chat", total_requests: 3, loaded_in_vram: true, unused: false, quantization: "Q8_0" });
    expect(used.size_gb).toBeGreaterThan(1);
    expect(used.last_used).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(used.days_unused).toBe(0);
    expect(idle).toMatchObject({ name: "llama3.2:3b", total_requests: 0, last_used: null, days_unused: null, loaded_in_vram: false, unused: true });
    expect(other).toMatchObject({ name: "qwen3:8b", unused: true, loaded_in_vram: false });
    expect(small$.total_size_gb).toBeCloseTo(used.size_gb + idle.size_gb + other.size_gb, 5);
    expect(small$).toMatchObject({ disk_total_gb: 1000, disk_available_gb: 500 });
  });
});

describe("POST /dashboard/api/pull and /dashboard/api/delete", () => {
  test("a pull puts the model on the node, and the router shows it at once", async () => {
    const res = await post("/dashboard/api/pull", { node_id: "small", model: "gemma3:4b" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, node_id: "small", model: "gemma3:4b" });
    expect(await simModels(small)).toContain("gemma3:4b");
    expect(await routerTags()).toContain("gemma3:4b");
    const listed = (await management()).nodes.find((n: any) => n.node_id === "small").models.find((m: any) => m.name === "gemma3:4b");
    expect(listed.size_gb).toBeGreaterThan(2);
  });

  test("a delete removes it from the node, and the router stops listing it at once", async () => {
    const res = await post("/dashboard/api/delete", { node_id: "small", model: "gemma3:4b" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, node_id: "small", model: "gemma3:4b" });
    expect(await simModels(small)).not.toContain("gemma3:4b");
    expect(await routerTags()).not.toContain("gemma3:4b");
  });

  test("what the node refuses comes back as ok: false with its reason", async () => {
    const pull = await post("/dashboard/api/pull", { node_id: "small", model: "no-such-model:7b" });
    expect(pull.status).toBe(502);
    const pulled = (await pull.json()) as any;
    expect(pulled).toMatchObject({ ok: false, node_id: "small", model: "no-such-model:7b" });
    expect(pulled.error).toContain("file does not exist");

    const del = await post("/dashboard/api/delete", { node_id: "big", model: "llama3.2:1b" });
    expect(del.status).toBe(404);
    expect(await del.json()).toMatchObject({ ok: false, node_id: "big", model: "llama3.2:1b", error: expect.stringContaining("not found") });
    expect(await simModels(big)).toEqual(["qwen3:32b", "llama3.2:3b", "nomic-embed-text:latest"]);
  });

  for (const route of ["/dashboard/api/pull", "/dashboard/api/delete"]) {
    test(`${route}: a bad body is a 400 naming the field; an unknown node is a 404`, async () => {
      const cases: [unknown, string][] = [
        [{}, "node_id"],
        [{ node_id: "small" }, "model"],
        [{ node_id: 3, model: "qwen3:8b" }, "node_id"],
        [{ node_id: "small", model: " " }, "model"],
        ["{not json", "JSON"],
        ["[1]", "object"],
      ];
      for (const [body, field] of cases) {
        const res = await post(route, body);
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error).toContain(field);
      }
      const unknown = await post(route, { node_id: "ghost", model: "qwen3:8b" });
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as any).error).toContain("ghost");
    });
  }

  test("a model Ollama cannot pull is refused with how to install it", async () => {
    const res = await post("/dashboard/api/pull", { node_id: "small", model: "mlx-community/Qwen3-4B-4bit" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("nodes[].mlx");
  });
});

// ---- the pure parts, on hand-built fleets ---------------------------------

const node = (node_id: string, total_ram_gb: number | null, models: string[] = []): SnapshotNode => ({
  node_id,
  total_ram_gb,
  models: models.map((name) => ({ name, size_gb: 5 })),
});
const fleet = (nodes: SnapshotNode[], requests_24h: { model: string; requests: number }[] = []) => recommend({ nodes, requests_24h, now: 1_750_000_000 });

describe("the catalog", () => {
  test("30+ distinct Ollama models covering every category, each with a RAM need and a quality score", () => {
    expect(MODEL_CATALOG.length).toBeGreaterThanOrEqual(30);
    expect(new Set(MODEL_CATALOG.map((m) => m.model)).size).toBe(MODEL_CATALOG.length);
    expect(new Set(MODEL_CATALOG.map((m) => m.category))).toEqual(new Set(CATEGORIES));
    for (const m of MODEL_CATALOG) {
      expect(m.model).toMatch(/^[a-z0-9.-]+:[a-z0-9.]+$/);
      expect(m.ram_gb).toBeGreaterThan(0);
      expect(qualityScore(m)).toBeGreaterThan(0);
    }
  });
});

describe("recommend()", () => {
  test("usable RAM is total less 6 GB; the picks fit it, and no pick takes over half", () => {
    for (const total of [8, 16, 24, 36, 64, 128, 192, 512]) {
      const [n] = fleet([node("mac", total)]).nodes;
      expect(n!.usable_ram_gb).toBe(total - 6);
      expect(n!.total_recommended_ram_gb).toBeLessThanOrEqual(total - 6);
      for (const r of n!.recommendations) expect(r.ram_gb).toBeLessThanOrEqual((total - 6) / 2);
    }
  });

  test("a big machine covers every category; a 12 GB one covers what fits and says what is left uncovered", () => {
    const roomy = fleet([node("studio", 192)]);
    expect(roomy.uncovered_categories).toEqual([]);
    expect(new Set(roomy.nodes[0]!.recommendations.map((r) => r.category))).toEqual(new Set(CATEGORIES));

    const tight = fleet([node("air", 12)]);
    const picked = tight.nodes[0]!.recommendations.map((r) => r.category);
    expect(tight.uncovered_categories.length).toBeGreaterThan(0);
    expect([...picked, ...tight.uncovered_categories].sort()).toEqual([...CATEGORIES].sort());
    expect(tight.usage.category_coverage).toEqual(Object.fromEntries(CATEGORIES.map((c) => [c, picked.includes(c)])));
  });

  test("models in use on a node stay, with high priority and their request count, even when a better one fits", () => {
    const answer = fleet([node("mac", 64, ["llama3.1:8b", "qwen2.5:0.5b"])], [
      { model: "llama3.1:8b", requests: 40 },
      { model: "llama3.1:8b", requests: 2 }, // spellings merge
      { model: "gone:1b", requests: 5 },
    ]);
    const kept = answer.nodes[0]!.recommendations.find((r) => r.model === "llama3.1:8b");
    expect(kept).toMatchObject({ priority: "high", already_available: true, category: "general" });
    expect(kept!.reason).toContain("42 requests in 24h");
    expect(answer.nodes[0]!.recommendations.filter((r) => r.category === "general")).toHaveLength(1);
    expect(answer.usage.total_requests_24h).toBe(47);
    // A model on disk that nobody uses is not kept for its own sake.
    expect(answer.nodes[0]!.recommendations.map((r) => r.model)).not.toContain("qwen2.5:0.5b");
  });

  test("the 50% cap holds for models in use too", () => {
    const [n] = fleet([node("mini", 24, ["qwen2.5-coder:32b"])], [{ model: "qwen2.5-coder:32b", requests: 100 }]).nodes;
    expect(n!.recommendations.map((r) => r.model)).not.toContain("qwen2.5-coder:32b");
    expect(n!.recommendations.find((r) => r.category === "coding")).toMatchObject({ priority: "medium" });
  });

  test("a model already on the node's disk wins over a slightly better one that must be pulled", () => {
    const fresh = fleet([node("mac", 64)]).nodes[0]!.recommendations.find((r) => r.category === "embedding")!;
    expect(fresh.model).toBe("mxbai-embed-large:latest");
    const held = fleet([node("mac", 64, ["nomic-embed-text"])]).nodes[0]!.recommendations.find((r) => r.category === "embedding")!;
    expect(held).toMatchObject({ model: "nomic-embed-text:latest", already_available: true });
  });

  test("a big model is not recommended on two nodes, unless the second is serving with it", () => {
    const twins = fleet([node("a", 128), node("b", 128)]);
    const bigOn = (i: number) => twins.nodes[i]!.recommendations.filter((r) => r.ram_gb >= BIG_MODEL_GB).map((r) => r.model);
    expect(bigOn(0).length).toBeGreaterThan(0);
    expect(bigOn(1).length).toBeGreaterThan(0);
    expect(bigOn(0).filter((m) => bigOn(1).includes(m))).toEqual([]);
    // Small models may be everywhere.
    const embedder = (i: number) => twins.nodes[i]!.recommendations.find((r) => r.category === "embedding")!.model;
    expect(embedder(1)).toBe(embedder(0));

    const serving = fleet([node("a", 192, ["gpt-oss:120b"]), node("b", 192, ["gpt-oss:120b"])], [{ model: "gpt-oss:120b", requests: 900 }]);
    for (const n of serving.nodes) expect(n.recommendations.find((r) => r.model === "gpt-oss:120b")).toMatchObject({ priority: "high" });
  });

  test("the largest node chooses first, whatever the order nodes are listed in", () => {
    const answer = fleet([node("mini", 32), node("studio", 256)]);
    expect(answer.nodes.map((n) => n.node_id)).toEqual(["mini", "studio"]);
    const reasoning = (id: string) => answer.nodes.find((n) => n.node_id === id)!.recommendations.find((r) => r.category === "reasoning")!;
    expect(reasoning("studio").model).toBe("gpt-oss:120b");
    expect(reasoning("mini").ram_gb).toBeLessThanOrEqual(13);
  });

  test("a node that does not report its memory gets no recommendations and a note saying why", () => {
    const [n] = fleet([node("polled", null, ["llama3.2:3b"])], [{ model: "llama3.2:3b", requests: 3 }]).nodes;
    expect(n).toMatchObject({ total_ram_gb: null, usable_ram_gb: null, recommendations: [], ram_headroom_gb: null });
    expect(n!.note).toContain("agent");
  });
});

describe("modelInventory()", () => {
  const now = 1_750_000_000;
  const day = 86_400;
  const inventory = modelInventory(
    [
      {
        node_id: "mac",
        models: [
          { name: "zeta:1b", size_gb: 1 },
          { name: "alpha:1b", size_gb: 1 },
          { name: "old:7b", size_gb: 4.2 },
          { name: "recent:7b", size_gb: 4.5 },
          { name: "hot:7b", size_gb: 4.9 },
          { name: "llama3.2:latest", size_gb: 2 },
        ],
        loaded: ["hot:7b"],
        disk: null,
      },
    ],
    [
      { node_id: "mac", model: "old:7b", requests: 10, last_used: now - 8 * day },
      { node_id: "mac", model: "recent:7b", requests: 2, last_used: now - 6.9 * day },
      { node_id: "mac", model: "llama3.2", requests: 4, last_used: now - day },
      { node_id: "mac", model: "llama3.2:latest", requests: 1, last_used: now - 2 * day },
      { node_id: "other", model: "zeta:1b", requests: 9, last_used: now },
    ],
    now,
  ).nodes[0]!;

  test("sorted loaded first, then by last use, then by name", () => {
    expect(inventory.models.map((m) => m.name)).toEqual(["hot:7b", "llama3.2:latest", "recent:7b", "old:7b", "alpha:1b", "zeta:1b"]);
  });

  test("unused: never used on this node, or not for 7 days; usage under every spelling of a name counts", () => {
    const by = Object.fromEntries(inventory.models.map((m) => [m.name, m]));
    expect(by["old:7b"]).toMatchObject({ unused: true, days_unused: 8, total_requests: 10 });
    expect(by["recent:7b"]).toMatchObject({ unused: false, days_unused: 6.9 });
    expect(by["llama3.2:latest"]).toMatchObject({ unused: false, total_requests: 5, last_used: now - day });
    expect(by["zeta:1b"]).toMatchObject({ unused: true, total_requests: 0, last_used: null });
    expect(by["hot:7b"]).toMatchObject({ unused: true, loaded_in_vram: true });
    expect(inventory).toMatchObject({ total_size_gb: 17.6, disk_total_gb: null, disk_available_gb: null });
  });
});
