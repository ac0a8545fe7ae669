// What the real node agent reads of its Mac reaches a real router: the thermal state (or
// "unknown" and why), the free disk of the volumes its models are on, and what it knows of the
// native embedding servers' models. "studio" is a `herd node` process whose environment says
// where its models are (HOME, OLLAMA_MODELS, HF_HUB_CACHE, in a temp folder laid out as the
// downloads leave it), beside a stand-in text embedding server that answers GET /health (the
// agent's probe) and a vision server that is not running. "hot" is an agent in this process
// over the real collector, its NSProcessInfo reader the seam the test drives.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { statfs } from "node:fs/promises";
import { dirname, join } from "node:path";
import { LiveConfig } from "../src/config/live.ts";
import type { Heartbeat } from "../src/fleet/heartbeat.ts";
import { toGb } from "../src/fleet/node-models.ts";
import { type AgentHandle, postTo, startAgent } from "../src/node/agent.ts";
import { systemCollector } from "../src/node/collectors.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, freePorts, getJson, type Running, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

const NODE_TOKEN = "node-machine-test-token";
const FAST = { intervalMs: 200, timeoutMs: 2000, offlineMs: 4000 };

let dir: string;
let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let studio: Running;
let textServer: ReturnType<typeof Bun.serve> | null;
let hot: AgentHandle;
/** What "hot"'s NSProcessInfo reader returns, or throws. */
let thermalState: () => number = () => 0;
const sent: Heartbeat[] = [];

afterAll(cleanupFile);

const weights = (path: string) => {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), "weights");
};


beforeAll(async () => {
  dir = tmpDir();
  // nomic-embed-text's weights in the text server's fastembed cache, dinov2's in the hub cache; clip-vit-b32's nowhere.
  weights("home/.fleet-manager/models/text-embedding/models--nomic-ai--nomic-embed-text-v1.5/snapshots/5b0e/onnx/model_quantized.onnx");
  weights("hub/models--sefaburak--dinov2-small-onnx/snapshots/9a2c/dinov2_vits14.onnx");
  textServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (new URL(req.url).pathname === "/health" ? Response.json({ status: "ok" }) : new Response("not found", { status: 404 })) });
  const [visionPort] = await freePorts(1);
  sim = await startSimOllama({ id: "studio", models: ["llama3.2:3b"] });
  const config = join(dir, "herd.config.ts");
  writeFileSync(
    config,
    `export default {
  nodes: [
    { id: "studio", ollama: "${sim.url}", embedding: { text: { port: ${textServer.port} }, vision: { port: ${visionPort}, models: ["dinov2-vit-s14", "clip-vit-b32"] } } },
    { id: "hot" },
  ],
  heartbeat: ${JSON.stringify(FAST)},
  auth: { nodeToken: "${NODE_TOKEN}" },
};\n`,
  );
  router = await startRouterProcess(["serve", "--config", config, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  studio = spawnHerd(["node", "--router", router.url, "--ollama", sim.url, "--node-id", "studio", "--config", config], {
    env: { HERD_NODE_TOKEN: NODE_TOKEN, HOME: join(dir, "home"), OLLAMA_MODELS: join(dir, "ollama", "models"), HF_HUB_CACHE: join(dir, "hub") },
  });
  const live = await LiveConfig.open(config, (c) => c);
  const post = postTo(router.url, 1000, () => NODE_TOKEN);
  hot = startAgent({
    nodeId: "hot",
    live,
    ollamaUrl: sim.url,
    collector: systemCollector({ thermalState: () => thermalState() }),
    send: async (hb) => {
      sent.push(hb);
      await post(hb);
    },
  });
  await eventually(async () => (await node("studio"))?.agent_version, 8000, "studio's agent reporting");
});

afterAll(async () => {
  await hot?.stop();
  await studio?.stop();
  await router?.stop();
  await textServer?.stop(true);
  await sim?.stop();
});

const node = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const check = async (id: string) => (await getJson(`${router.url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === id);

/** Waits until node `id`'s /fleet/status entry matches `expected`, and returns it. */
async function until(id: string, expected: Record<string, unknown>): Promise<any> {
  return eventually(
    async () => {
      const n = await node(id);
      try {
        expect(n).toMatchObject(expected);
        return n;
      } catch {
        return null;
      }
    },
    4000,
    `${id} to report ${JSON.stringify(expected)}`,
  );
}

describe("thermal state", () => {
  test("read through NSProcessInfo: each of macOS's states, and the thermal check's severity for it", async () => {
    for (const [raw, state, severity] of [
      [1, "fair", "info"],
      [2, "serious", "warning"],
      [3, "critical", "critical"],
      [0, "nominal", "ok"],
    ] as const) {
      thermalState = () => raw;
      await hot.beat();
      expect((await node("hot")).thermal).toEqual({ state });
      expect(((await check("thermal")).details.problems ?? []).find((p: any) => p.node === "hot")?.severity ?? "ok").toBe(severity);
    }
  });

  test("a reader that fails is unknown, with its reason, on /fleet/status and the Health page, never nominal", async () => {
    thermalState = () => 0;
    await hot.beat();
    thermalState = () => {
      throw new Error("cannot call NSProcessInfo through Bun's FFI: dlopen failed");
    };
    await hot.beat();
    // The earlier "nominal" the router still holds no longer counts.
    expect((await node("hot")).thermal).toEqual({ state: "unknown", reason: "cannot call NSProcessInfo through Bun's FFI: dlopen failed" });
    const thermal = await check("thermal");
    expect(thermal.severity).toBe("info");
    expect(thermal.finding).toContain("hot: thermal state unknown (cannot call NSProcessInfo through Bun's FFI: dlopen failed)");
    expect(thermal.recommendation).toContain("herd cannot see whether hot throttles");
    // A router that knows only macOS's four states still takes the heartbeat: "unknown" is a field of its own.
    const last = sent.at(-1)!;
    expect(last.thermal).toBeUndefined();
    expect(last.thermal_unknown).toBe("cannot call NSProcessInfo through Bun's FFI: dlopen failed");
    thermalState = () => 1;
    await hot.beat();
    expect((await node("hot")).thermal).toEqual({ state: "fair" });
    expect(sent.at(-1)).toMatchObject({ thermal: { state: "fair" }, thermal_unknown: null });
  });

  test("the agent process says what this machine gives: a state on a Mac, elsewhere unknown and why", async () => {
    if (process.platform === "darwin") {
      expect(["nominal", "fair", "serious", "critical"]).toContain((await until("studio", { thermal: {} })).thermal.state);
      return;
    }
    const reason = `not macOS (${process.platform}): herd reads the thermal state from macOS's NSProcessInfo`;
    await until("studio", { thermal: { state: "unknown", reason } });
    expect((await check("thermal")).finding).toContain(`studio: thermal state unknown (${reason})`);
  });
});

test("disk: the volume of the models' folders (Ollama's not made yet, so its nearest ancestor's), once for the filesystem both are on", async () => {
  const studioNode = await until("studio", { disk_volumes: [{ holds: ["ollama", "huggingface"] }] });
  const fs = await statfs(dir);
  expect(studioNode.disk_volumes).toEqual([{ holds: ["ollama", "huggingface"], path: join(dir, "ollama", "models"), total_gb: toGb(fs.blocks * fs.bsize), available_gb: expect.any(Number) }]);
  expect(Math.abs(studioNode.disk_volumes[0].available_gb - toGb(fs.bavail * fs.bsize))).toBeLessThan(1);
  // Seed 000's disk is Ollama's volume.
  expect(studioNode.disk).toEqual({ total_gb: studioNode.disk_volumes[0].total_gb, available_gb: studioNode.disk_volumes[0].available_gb });
});

describe("native embedding servers", () => {
  test("a running text server: each model with its dimensions and whether its weights are on disk", async () => {
    await until("studio", {
      text_embedding: { models_available: [{ name: "nomic-embed-text", dimensions: 768, cached: true }], processing: false },
      text_embedding_port: textServer!.port,
      text_embedding_status: { backend_available: true, cached_model_count: 1 },
    });
  });

  test("vision weights cached and no server running: vision_backend_missing fires for herd's own node", async () => {
    await until("studio", { vision_embedding_status: { backend_available: false, cached_model_count: 1 } });
    const missing = await check("vision_backend_missing");
    expect(missing.severity).toBe("warning");
    expect(missing.finding).toBe("studio: 1 vision embedding model(s) cached but no vision embedding server runs (onnxruntime not installed, or the server not started)");
  });

  test("the text server stopped with its weights cached: text_embedding_backend_missing fires", async () => {
    await textServer!.stop(true);
    textServer = null;
    await until("studio", { text_embedding: null, text_embedding_status: { backend_available: false, cached_model_count: 1 } });
    const missing = await check("text_embedding_backend_missing");
    expect(missing.severity).toBe("warning");
    expect(missing.finding).toBe("studio: 1 text embedding model(s) cached but no text embedding server runs (fastembed not installed, or the server not started)");
  });
});

test("a heartbeat's thermal, config, disk and embedding fields are bounded: a wrong one is a 400 naming it", async () => {
  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${router.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${NODE_TOKEN}` }, body: JSON.stringify({ node_id: "hot", ...body }) });
    return [res.status, ((await res.json()) as any).error];
  };
  const volume = { holds: ["ollama"], path: "/Users/ann/.ollama/models", total_gb: 100, available_gb: 50 };
  for (const [body, error] of [
    [{ thermal: { state: "unknown" } }, 'thermal.state: expected ("nominal" or "fair" or "serious" or "critical"), got "unknown"'],
    [{ thermal_unknown: "x".repeat(301) }, "thermal_unknown: "],
    [{ config_error: "x".repeat(2001) }, "config_error: "],
    [{ disk_volumes: Array(9).fill(volume) }, "disk_volumes: "],
    [{ disk_volumes: [{ ...volume, path: "/".repeat(1025) }] }, "disk_volumes[0].path: "],
    [{ disk_volumes: [{ ...volume, available_gb: -1 }] }, "disk_volumes[0].available_gb: "],
    [{ text_embedding: { models_available: [{ name: "nomic-embed-text", dimensions: 76.8 }] } }, "text_embedding.models_available[0].dimensions: expected a whole number, got 76.8"],
  ] as const) {
    const [status, message] = await post(body);
    expect([status, message]).toEqual([400, expect.stringContaining(error)]);
  }
});
