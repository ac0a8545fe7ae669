// VRAM fallback through a real router: a node agent (the real one, reporting a
// simulated Mac's memory) says the requested model cannot fit without evictions;
// herd serves a loaded model of the same kind instead, unless told not to.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveConfig } from "../src/config/live.ts";
import { postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { startSimOllama } from "../src/sim/index.ts";
import { eventually, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
/** The agent's credential: herd takes a polled node's memory only from a heartbeat that carries one (docs/security.md). */
const NODE_TOKEN = "fallback-node-token";

/** `extra`: more of the router's config (client keys, say); `reader`: the headers that read the fleet's status. */
async function macWith(loaded: string[], extra: Record<string, unknown> = {}, reader: Record<string, string> = {}) {
  const sim = await startSimOllama({ id: "mac", memoryGb: 32, models: ["qwen3:32b", "qwen3:8b", "llama3.2:3b", "gemma3:12b", "gemma3:4b", "nomic-embed-text", "llama3.3:70b"], loaded });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default ${JSON.stringify({ nodes: [{ id: "mac", ollama: sim.url, token: NODE_TOKEN }], heartbeat: FAST, ...extra })};\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  const live = await LiveConfig.open(null, (c) => ({ ...c, heartbeat: FAST }));
  const agent = startAgent({ nodeId: "mac", live, ollamaUrl: sim.url, send: postTo(router.url, 1000, () => NODE_TOKEN), collector: simCollector(sim, { chip: "Apple M2 Pro", memoryBandwidthGbps: 200 }) });
  await agent.beat();
  const fleetStatus = async () => (await fetch(`${router.url}/fleet/status`, { headers: reader })).json() as Promise<any>;
  await eventually(async () => (await fleetStatus()).nodes[0]?.memory, 3000, "the agent's report");
  const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${router.url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "qwen3:32b", messages: [{ role: "user", content: "hi" }], stream: false, ...body }),
    });
  const stop = async () => {
    agent.stop();
    await sim.stop();
  };
  const freeGb = async () => (await fleetStatus()).nodes[0].memory.available_gb as number;
  return { chat, stop, freeGb };
}

describe("VRAM fallback", () => {
  test("a cold model that cannot fit is served by a loaded model of the same kind; the headers say so", async () => {
    const mac = await macWith(["qwen3:8b", "llama3.2:3b", "gemma3:12b"]);
    expect(await mac.freeGb()).toBeLessThan(19);
    const res = await mac.chat({});
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-requested-model")).toBe("qwen3:32b");
    expect(res.headers.get("x-fleet-served-model")).toBe("qwen3:8b");
    expect(res.headers.get("x-fleet-fallback")).toBe("true");
    expect(((await res.json()) as any).model).toBe("qwen3:8b");
    await mac.stop();
  });

  test("a model bigger than every node (llama3.3:70b, ~40 GB, on a 32 GB Mac) is served by a loaded model of the same kind, not a 503", async () => {
    const mac = await macWith(["qwen3:8b", "llama3.2:3b"]);
    const res = await mac.chat({ model: "llama3.3:70b" });
    expect([res.status, res.headers.get("x-fleet-requested-model"), res.headers.get("x-fleet-served-model"), res.headers.get("x-fleet-fallback")]).toEqual([200, "llama3.3:70b", "llama3.2:3b", "true"]);
    expect(((await res.json()) as any).model).toBe("llama3.2:3b");
    // Strict, it is the 503 that says why.
    const strict = await mac.chat({ model: "llama3.3:70b" }, { "X-Fleet-No-Fallback": "true" });
    expect(strict.status).toBe(503);
    expect(((await strict.json()) as any).error).toContain("llama3.3:70b on mac (model needs");
    await mac.stop();
  });

  test("X-Fleet-No-Fallback: true and \"fallback\": false get exactly the model asked for", async () => {
    const mac = await macWith(["qwen3:8b", "llama3.2:3b", "gemma3:12b"]);
    const strict = await mac.chat({}, { "X-Fleet-No-Fallback": "true" });
    expect(strict.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
    expect(strict.headers.get("x-fleet-fallback")).toBe("false");
    await strict.json();
    await mac.stop();
    const again = await macWith(["qwen3:8b", "llama3.2:3b", "gemma3:12b"]);
    const body = await again.chat({ fallback: false });
    expect(body.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
    await body.json();
    await again.stop();
  });

  test("a client key is given a stand-in only if its models allow it, else the model asked for", async () => {
    const keys = { auth: { clients: [{ name: "only32b", key: "sk-32b-5a4b3c2d1e0f", models: ["qwen3:32b"] }, { name: "qwen3", key: "sk-qw3-0f1e2d3c4b5a", models: ["qwen3:*"] }] } };
    const mac = await macWith(["qwen3:8b", "llama3.2:3b", "gemma3:12b"], keys, { authorization: "Bearer sk-32b-5a4b3c2d1e0f" });
    expect(await mac.freeGb()).toBeLessThan(19);
    const family = await mac.chat({}, { authorization: "Bearer sk-qw3-0f1e2d3c4b5a" });
    expect(family.headers.get("x-fleet-served-model")).toBe("qwen3:8b");
    expect(family.headers.get("x-fleet-fallback")).toBe("true");
    await family.json();
    const only = await mac.chat({}, { authorization: "Bearer sk-32b-5a4b3c2d1e0f" });
    expect(only.status).toBe(200);
    expect(only.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
    expect(only.headers.get("x-fleet-fallback")).toBe("false");
    await only.json();
    await mac.stop();
  });

  test("never a model of another kind: with only vision, embedding and general models loaded, the requested model is loaded", async () => {
    const mac = await macWith(["gemma3:12b", "gemma3:4b", "nomic-embed-text", "llama3.2:3b"]);
    expect(await mac.freeGb()).toBeLessThan(19); // qwen3:32b needs ~20 GB: it cannot fit without evictions
    const res = await mac.chat({});
    expect(res.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
    expect(res.headers.get("x-fleet-fallback")).toBe("false");
    await res.json();
    await mac.stop();
  });
});
