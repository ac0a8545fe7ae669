// The health engine through GET /dashboard/api/health on a real router: each
// check's condition is built with simulated nodes — "mac" reported by the real
// node agent over a sim collector whose machine POST /_sim sets, other nodes by
// heartbeats this file sends as their agents would, faults injected into sims,
// real requests through the router, and edits of the config file — and each
// check must fire with its severity. The tests share one router, in order; the
// first one sees a healthy fleet, where every check must be ok.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveConfig } from "../src/config/live.ts";
import { type AgentHandle, postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = { intervalMs: 200, timeoutMs: 1500, offlineMs: 3000 };
const FIRST_BYTE_MS = 2000;
// This file reports for nodes the config does not declare (as their agents would): they enroll with the fleet's node credential.
const NODE_TOKEN = "health-test-node-token";
const CHECK_IDS = [
  "config_drift", "config_reload_error", "context_waste", "disk_space_low", "embed_error_rate", "error_rate", "memory_pressure", "mlx_server_unhealthy",
  "model_thrashing", "nodes_offline", "nomic_loaded_in_ollama", "ollama_unreachable", "otlp_export", "priority_models", "request_timeouts", "retry_rate",
  "store_writable", "text_embedding_backend_missing", "text_embedding_ollama_bypass", "thermal", "vision_backend_missing", "zombie_requests",
];

let mac: SimNode;
/** Answers every request with a 500 (Ollama's "model runner has unexpectedly stopped"). */
let flakySim: SimNode;
/** Accepts every request and never answers. */
let hangSim: SimNode;
/** A 16 GB Mac whose every load takes 3 s, as a big model's takes most of a minute on a real one. */
let slowSim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let agent: AgentHandle;
let configFile: string;
let agentConfig: LiveConfig;

afterAll(cleanupFile);

beforeAll(async () => {
  [mac, flakySim, hangSim, slowSim] = await Promise.all([
    // Its operator set OLLAMA_CONTEXT_LENGTH=4096: without it a 64 GB Mac loads every model at up to 262144 tokens.
    startSimOllama({ id: "mac", memoryGb: 64, contextLength: 4096, models: ["llama3.2:3b", "qwen3:8b", "gemma3:4b", "nomic-embed-text"], loaded: ["llama3.2:3b"] }),
    startSimOllama({ id: "flaky", faults: { error500: true } }),
    startSimOllama({ id: "hung", faults: { hang: true } }),
    startSimOllama({ id: "slow", memoryGb: 16, loadTimeMs: 3000, models: ["llama3.2:1b", "llama3.3:70b"] }),
  ]);
  const dir = tmpDir();
  configFile = join(dir, "herd.config.ts");
  writeConfig();
  router = await startRouterProcess(["serve", "--config", configFile, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  // The agent reads the router's own file, as on the router's Mac: it runs the router's config, and follows its edits.
  agentConfig = await LiveConfig.open(configFile);
  agentConfig.watch();
  agent = startAgent({ nodeId: "mac", live: agentConfig, ollamaUrl: mac.url, send: postTo(router.url, 1000, () => NODE_TOKEN), collector: simCollector(mac, { chip: "Apple M2 Max", memoryBandwidthGbps: 400 }) });
  await agent.beat();
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac")?.source === "agent", 3000, "mac's agent");
});

afterAll(async () => {
  await agent?.stop();
  agentConfig?.close();
  await router?.stop();
  await Promise.all([mac?.stop(), flakySim?.stop(), hangSim?.stop(), slowSim?.stop()]);
});

// autoPull off: a model nobody has fails at once. passthrough: a client's num_ctx reaches Ollama as sent. The point
// scorer: these tests need a node tried first because it claims a model loaded (finish-time weighs the mac's learned,
// near-instant simulated loads the same and may pick either).
function writeConfig(extraNodes = "") {
  writeFileSync(
    configFile,
    `export default {
  nodes: [{ id: "mac", ollama: "${mac.url}" }${extraNodes}],
  heartbeat: ${JSON.stringify(FAST)},
  auth: { nodeToken: "${NODE_TOKEN}" },
  timeouts: { firstByteMs: ${FIRST_BYTE_MS}, staleRequestMs: 300 },
  features: { autoPull: false, contextProtection: "passthrough" },
  routing: { strategy: "score" },
};\n`,
  );
}

const health = (query = "?refresh=1") => getJson(`${router.url}/dashboard/api/health${query}`);

/** Waits until check `id` has `severity`, and returns it. */
async function until(id: string, severity: string, timeoutMs = 5000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = (await health()).checks.find((c: any) => c.id === id);
    if (last?.severity === severity) return last;
    await Bun.sleep(50);
  }
  throw new Error(`${id} never became ${severity}; last: ${JSON.stringify(last)}`);
}

async function simPost(node: SimNode, body: unknown): Promise<Response> {
  return fetch(`${node.url}/_sim`, { method: "POST", body: JSON.stringify(body) });
}

const machine = async (m: unknown) => expect((await simPost(mac, { machine: m })).status).toBe(200);

function chat(model: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${router.url}/api/chat`, {
    method: "POST",
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }], stream: false, ...extra }),
    signal,
  });
}

async function heartbeat(body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${router.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${NODE_TOKEN}` }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

/** An Ollama section as an agent reports it: these models loaded (and on disk). */
const holding = (models: string[]) => ({
  reachable: true,
  models_loaded: models.map((name) => ({ name, size_gb: 2, context_length: 4096 })),
  models_available: models.map((name) => ({ name, size: 2 * 1024 ** 3 })),
});

/** Heartbeats for `nodeId` every 150 ms, as its agent would send them, until stopped. */
function reporting(nodeId: string, ollamaUrl: string, models: string[]) {
  let running = true;
  const loop = (async () => {
    while (running) {
      await heartbeat({ node_id: nodeId, ollama_url: ollamaUrl, ollama: holding(models) });
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

test("a healthy fleet with traffic: every check is listed, and every one is ok", async () => {
  for (let i = 0; i < 5; i++) expect((await chat("llama3.2:3b")).status).toBe(200);
  const report = await health();
  expect(report.checks.map((c: any) => c.id).sort()).toEqual(CHECK_IDS);
  for (const check of report.checks) {
    expect({ id: check.id, severity: check.severity, recommendation: check.recommendation }).toEqual({ id: check.id, severity: "ok", recommendation: "" });
    expect(check.name.length).toBeGreaterThan(0);
    expect(check.finding.length).toBeGreaterThan(0);
  }
  expect(report.summary).toEqual({ status: "ok", critical: 0, warning: 0, info: 0, ok: CHECK_IDS.length });
  expect(report.cached).toBe(false);
  expect(Math.abs(report.generated_at - Date.now() / 1000)).toBeLessThan(5);
});

test("the answer is cached for 30 s; refresh=1 recomputes it; a bad refresh is a 400 naming it", async () => {
  const fresh = await health();
  const again = await health("");
  expect(again.cached).toBe(true);
  expect(again.generated_at).toBe(fresh.generated_at);
  expect(again.checks).toEqual(fresh.checks);
  await Bun.sleep(10);
  const recomputed = await health("?refresh=1");
  expect(recomputed.cached).toBe(false);
  expect(recomputed.generated_at).toBeGreaterThan(fresh.generated_at);
  const bad = await fetch(`${router.url}/dashboard/api/health?refresh=yes`);
  expect(bad.status).toBe(400);
  expect(await bad.json()).toEqual({ error: 'refresh: expected 0 or 1, got "yes"' });
});

test("GET /dashboard/api/context-usage: the seed's shape, from the loaded context and the traces", async () => {
  const usage = await eventually(async () => {
    const body = await getJson(`${router.url}/dashboard/api/context-usage`);
    return body.models.find((m: any) => m.model === "llama3.2:3b")?.request_count === 5 && body;
  }, 3000, "the healthy test's traces");
  expect(usage.days).toBe(7);
  const llama = usage.models.find((m: any) => m.model === "llama3.2:3b");
  expect(Object.keys(llama)).toEqual([
    "model", "allocated_ctx", "override_ctx", "request_count", "prompt_tokens", "total_tokens", "utilization_pct", "recommended_ctx", "savings_pct",
  ]);
  expect(llama).toMatchObject({ allocated_ctx: 4096, override_ctx: null, request_count: 5 });
  const traces = (await getJson(`${router.url}/dashboard/api/traces`)).traces.filter((t: any) => t.model === "llama3.2:3b");
  const prompts = traces.map((t: any) => t.prompt_tokens);
  const totals = traces.map((t: any) => t.prompt_tokens + t.completion_tokens);
  const { avg, p50, p75, p95, p99, max } = llama.prompt_tokens;
  expect(max).toBe(Math.max(...prompts));
  expect(avg).toBe(Math.round(prompts.reduce((a: number, b: number) => a + b, 0) / prompts.length));
  expect([p50, p75, p95, p99, max]).toEqual([p50, p75, p95, p99, max].toSorted((a, b) => a - b));
  expect(llama.total_tokens.max).toBe(Math.max(...totals));
  expect(llama.total_tokens.max_24h).toBe(llama.total_tokens.max);
  expect(llama.total_tokens.p99).toBeLessThanOrEqual(llama.total_tokens.max);
  // The next power of two with 2× headroom over the p99 request, never under 2048.
  const rec = llama.recommended_ctx;
  expect(Number.isInteger(Math.log2(rec))).toBe(true);
  expect(rec).toBeGreaterThanOrEqual(Math.max(2048, 2 * llama.total_tokens.p99));
  expect(rec === 2048 || rec / 2 < 2 * llama.total_tokens.p99).toBe(true);
  expect(llama.utilization_pct).toBe(Math.round((llama.total_tokens.p99 / 4096) * 1000) / 10);
  expect(llama.savings_pct).toBe(Math.round(Math.max(0, 1 - rec / 4096) * 1000) / 10);

  expect((await getJson(`${router.url}/dashboard/api/context-usage?days=30`)).days).toBe(30);
  const bad = await fetch(`${router.url}/dashboard/api/context-usage?days=0`);
  expect(bad.status).toBe(400);
  expect(await bad.json()).toEqual({ error: 'days: expected a whole number from 1 to 365, got "0"' });
});

test("nodes_offline: a declared node nobody can reach is critical, and the check clears when it leaves the config", async () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port;
  await probe.stop(true);
  writeConfig(`, { id: "gone", ollama: "http://127.0.0.1:${port}" }`);
  const check = await until("nodes_offline", "critical");
  expect(check.nodes).toEqual(["gone"]);
  expect(check.finding).toContain("gone is offline: never reached");
  expect(check.recommendation).toContain("start herd node (or Ollama) on gone");
  writeConfig();
  expect((await until("nodes_offline", "ok")).finding).toBe("all 1 node(s) online");
});

test("ollama_unreachable: an agent that reports while its Ollama does not answer is a warning while another node serves; /healthz stays ok", async () => {
  const beats = (async () => {
    for (let i = 0; i < 20; i++) {
      await heartbeat({ node_id: "no-ollama", ollama_url: "http://127.0.0.1:9", ollama: { reachable: false, error: "connection refused", models_loaded: [], models_available: [] } });
      await Bun.sleep(100);
    }
  })();
  const check = await until("ollama_unreachable", "warning");
  expect(check.nodes).toEqual(["no-ollama"]);
  expect(check.finding).toBe("no-ollama: Ollama at http://127.0.0.1:9 does not answer (connection refused)");
  expect(check.recommendation).toContain("`OLLAMA_HOST=0.0.0.0 ollama serve`");
  // The node is up, but routing leaves it out whatever the model, and /fleet/status says why.
  const node = (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "no-ollama");
  expect([node.status, node.excluded]).toEqual(["online", "ollama unreachable"]);
  expect(await getJson(`${router.url}/healthz`)).toMatchObject({ status: "ok", reasons: [] });
  await beats;
});

test("config_reload_error: a broken edit is a warning naming the problem, until the file is fixed", async () => {
  writeFileSync(configFile, `export default { nodes: [{ id: "mac", ollama: "not a url" }] };\n`);
  const check = await until("config_reload_error", "warning");
  expect(check.finding).toContain("nodes[0].ollama: expected a URL");
  expect(check.recommendation).toContain(`herd check-config ${configFile}`);
  writeConfig();
  await until("config_reload_error", "ok");
});

describe("the machine under a node (the real agent reports what POST /_sim machine sets)", () => {
  test("memory_pressure: warning, then critical, with the free memory; quiet again at nominal", async () => {
    await machine({ pressure: "warning" });
    const warning = await until("memory_pressure", "warning");
    expect(warning.nodes).toEqual(["mac"]);
    expect(warning.finding).toMatch(/^mac: memory pressure warning \([\d.]+ GB of 64 GB free\)$/);
    expect(warning.recommendation).toContain("unload or unpin a model on mac");
    await machine({ pressure: "critical" });
    await until("memory_pressure", "critical");
    await machine({});
    await until("memory_pressure", "ok");
  });

  test("thermal: fair is info, serious a warning, critical critical", async () => {
    await machine({ thermal: "fair" });
    await until("thermal", "info");
    await machine({ thermal: "serious" });
    const serious = await until("thermal", "warning");
    expect(serious.finding).toBe("mac: thermal state serious (macOS is throttling it)");
    await machine({ thermal: "critical" });
    await until("thermal", "critical");
    await machine({});
    await until("thermal", "ok");
  });

  test("disk_space_low: under 20 GB free is a warning, under 5 GB critical", async () => {
    await machine({ diskAvailableGb: 12 });
    const warning = await until("disk_space_low", "warning");
    expect(warning.finding).toBe("mac: 12 GB of 1000 GB free on the disk of Ollama's models and the Hugging Face cache (/simulated/.ollama/models)");
    expect(warning.recommendation).toContain("ollama rm MODEL");
    expect(warning.recommendation).toContain("mlx_lm.manage --delete --pattern MODEL");
    await machine({ diskAvailableGb: 3 });
    await until("disk_space_low", "critical");
    await machine({});
    await until("disk_space_low", "ok");
  });

  test("vision_backend_missing: weights cached without the runtime is a warning; with it, ok", async () => {
    await machine({ visionEmbedding: { backendAvailable: false, cachedModels: 3 } });
    const check = await until("vision_backend_missing", "warning");
    expect(check.finding).toContain("mac: 3 vision embedding model(s) cached but no vision embedding server runs");
    await machine({ visionEmbedding: { backendAvailable: true, cachedModels: 3 } });
    await until("vision_backend_missing", "ok");
    await machine({});
  });

  test("text_embedding_backend_missing: text embedding weights cached without fastembed is a warning", async () => {
    await machine({ textEmbedding: { running: false, backendAvailable: false, cachedModels: 1 } });
    expect((await until("text_embedding_backend_missing", "warning")).finding).toContain("mac: 1 text embedding model(s) cached but no text embedding server runs");
    await machine({});
    await until("text_embedding_backend_missing", "ok");
  });

  test("text_embedding_ollama_bypass: nomic-embed-text loaded in Ollama while the native server is down is a warning", async () => {
    expect((await simPost(mac, { loaded: ["llama3.2:3b", "nomic-embed-text"] })).status).toBe(200);
    await machine({ textEmbedding: { running: false, backendAvailable: true, cachedModels: 1 } });
    const check = await until("text_embedding_ollama_bypass", "warning");
    expect(check.finding).toContain("mac: nomic-embed-text runs in Ollama because the native text embedding server is not running");
    expect((await health()).checks.find((c: any) => c.id === "nomic_loaded_in_ollama").severity).toBe("ok");
    await machine({});
    await until("text_embedding_ollama_bypass", "ok"); // an agent that reports no native server cannot have it down
  });

  test("nomic_loaded_in_ollama: the native server running while Ollama still holds nomic-embed-text is info", async () => {
    expect((await simPost(mac, { loaded: ["llama3.2:3b", "nomic-embed-text"] })).status).toBe(200);
    await machine({ textEmbedding: { running: true, backendAvailable: true, cachedModels: 1 } });
    const check = await until("nomic_loaded_in_ollama", "info");
    expect(check.finding).toContain("native server (port 11439) serves it");
    expect((await health()).checks.find((c: any) => c.id === "text_embedding_ollama_bypass").severity).toBe("ok");
    expect((await simPost(mac, { loaded: ["llama3.2:3b"] })).status).toBe(200);
    await until("nomic_loaded_in_ollama", "ok");
    await machine({});
  });

  test("POST /_sim refuses a bad machine with a 400 naming the field, changing nothing", async () => {
    for (const [m, error] of [
      [{ thermal: "hot" }, "machine.thermal must be one of nominal, fair, serious, critical, unknown"],
      [{ diskAvailableGb: -1 }, "machine.diskAvailableGb must be a number from 0 to 1000"],
      [{ textEmbedding: { backendAvailable: true, cachedModels: 1 } }, "machine.textEmbedding.running must be a boolean"],
      [{ fans: 3 }, 'unknown machine key "fans"'],
    ] as const) {
      const res = await simPost(mac, { machine: m, tokensPerSecond: 1 });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error });
    }
    expect(mac.state()).toMatchObject({ machine: {}, tokensPerSecond: 400 });
  });
});

test("model_thrashing: a model loaded 3 times in the hour on one node is a warning, 6 times critical", async () => {
  const report = (loaded: string[]) => heartbeat({ node_id: "thrash", ollama: holding(loaded) });
  await report([]);
  for (let i = 0; i < 3; i++) {
    await report(["qwen3:32b"]);
    await report([]);
  }
  const check = await until("model_thrashing", "warning");
  expect(check.finding).toBe("thrash loaded qwen3:32b 3 times in the last hour");
  expect(check.nodes).toEqual(["thrash"]);
  for (let i = 0; i < 3; i++) {
    await report(["qwen3:32b"]);
    await report([]);
  }
  await until("model_thrashing", "critical");
});

test("mlx_server_unhealthy: a server still loading its model (mlx-lm 0.31.3 and later: listening, unable to complete yet) is no problem", async () => {
  const loading = { port: 11442, model: "mlx-community/Model-11442", status: "loading", status_reason: "listening; loading the model" };
  await heartbeat({ node_id: "studio", mlx_servers: [loading] });
  const check = await until("mlx_server_unhealthy", "ok");
  expect(check.finding).toBe("every MLX server is healthy (or starting, or loading)");
});

test("mlx_server_unhealthy: a memory-blocked server is a warning, a quarantined one critical; healthy again is ok", async () => {
  const server = (port: number, status: string, status_reason: string) => ({ port, model: `mlx-community/Model-${port}`, status, status_reason });
  await heartbeat({ node_id: "studio", mlx_servers: [server(11440, "memory_blocked", "memory gate: 42.0 GB needed, 16 GB available")] });
  const blocked = await until("mlx_server_unhealthy", "warning");
  expect(blocked.finding).toBe("studio: MLX mlx-community/Model-11440 on :11440 is memory_blocked (memory gate: 42.0 GB needed, 16 GB available)");
  expect(blocked.recommendation).toContain("free memory on studio");
  await heartbeat({
    node_id: "studio",
    mlx_servers: [server(11440, "healthy", ""), server(11441, "quarantined", "5 crashes within 300s; next restart in 600s")],
  });
  expect((await until("mlx_server_unhealthy", "critical")).finding).toContain("on :11441 is quarantined");
  await heartbeat({ node_id: "studio", mlx_servers: [server(11440, "healthy", ""), server(11441, "starting", "")] });
  await until("mlx_server_unhealthy", "ok");
});

async function pin(model: string, pinned: boolean, node_id = "mac") {
  const res = await fetch(`${router.url}/dashboard/api/pinned-models`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ node_id, model, pinned }) });
  expect(res.status).toBe(200);
}

test("priority_models: a pinned model loaded nowhere is a warning that says to pull it; unpinned, ok", async () => {
  await pin("llama3.2:3b", true);
  expect((await until("priority_models", "ok")).finding).toBe("all 1 pin(s) loaded");
  await pin("qwen3:0.6b", true);
  const check = await until("priority_models", "warning");
  expect(check.finding).toBe("pinned qwen3:0.6b (on mac) is not loaded anywhere");
  expect(check.recommendation).toContain("pull qwen3:0.6b onto mac");
  await pin("qwen3:0.6b", false);
  await pin("llama3.2:3b", false);
  expect((await until("priority_models", "ok")).finding).toBe("no pinned models");
});

describe("pins on a Mac whose loads take a while (node slow)", () => {
  beforeAll(async () => {
    writeConfig(`, { id: "slow", ollama: "${slowSim.url}" }`);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "slow")?.status === "online", 3000, "slow online");
  });
  afterAll(() => writeConfig());

  test("priority_models: a pin whose load is under way says it is loading, where and for how long, and never fails; loaded, ok", async () => {
    await pin("llama3.2:1b", true, "slow");
    const seen: { severity: string; finding: string }[] = [];
    await eventually(async () => {
      const check = (await health()).checks.find((c: any) => c.id === "priority_models");
      seen.push({ severity: check.severity, finding: check.finding });
      return check.severity === "ok";
    }, 10_000, "the pin loaded");
    expect(seen.filter((c) => c.severity !== "info" && c.severity !== "ok")).toEqual([]);
    const loading = seen.filter((c) => c.finding.includes("is loading"));
    // Said all through the sim's 3 s load, not only at its start.
    expect(loading.at(-1)?.finding).toMatch(/^pinned llama3\.2:1b is loading on slow \(for \d s\)$/);
    expect(seen.at(-1)!.finding).toBe("all 1 pin(s) loaded");
    await pin("llama3.2:1b", false, "slow");
  });

  test("priority_models: a pin whose load failed is a warning with the node's error, which the router's log has too", async () => {
    await pin("llama3.3:70b", true, "slow");
    const check = await eventually(async () => {
      const c = (await health()).checks.find((c: any) => c.id === "priority_models");
      return c.severity === "warning" && c;
    }, 10_000, "the failed load");
    expect(check.finding).toMatch(/^pinned llama3\.3:70b did not load on slow \([\d.]+ m?s ago\): model requires more system memory \([\d.]+ GiB\) than is available \(16\.0 GiB\)$/);
    expect(check.recommendation).toContain("make room on slow if it is memory");
    expect(router.output()).toMatch(/preloader: pinned llama3\.3:70b did not load on slow: model requires more system memory/);
    await pin("llama3.3:70b", false, "slow");
    expect((await until("priority_models", "ok")).finding).toBe("no pinned models");
  });
});

test("context_waste: a model loaded with a 32k window for requests of a few hundred tokens is a warning", async () => {
  for (let i = 0; i < 5; i++) expect((await chat("qwen3:8b", { options: { num_ctx: 32768 } })).status).toBe(200);
  const check = await until("context_waste", "warning");
  expect(check.nodes).toEqual(["mac"]);
  expect(check.finding).toContain("qwen3:8b on mac is loaded with num_ctx 32768 but 99% of its 5 requests use ≤");
  expect(check.details.problems[0]).toMatchObject({ model: "qwen3:8b", allocated_ctx: 32768 });
  const usage = (await getJson(`${router.url}/dashboard/api/context-usage`)).models.find((m: any) => m.model === "qwen3:8b");
  expect(usage).toMatchObject({ allocated_ctx: 32768, request_count: 5, recommended_ctx: check.details.problems[0].recommended_ctx });
  expect(usage.savings_pct).toBeGreaterThanOrEqual(87.5);
});

describe("requests that never end (node ghost answers nothing)", () => {
  test("zombie_requests: a request in flight past timeouts.staleRequestMs is a warning, until it ends", async () => {
    const ghost = reporting("ghost", hangSim.url, ["phi3:mini"]);
    try {
      const client = new AbortController();
      const pending = chat("phi3:mini", {}, client.signal).catch(() => null);
      const check = await until("zombie_requests", "warning", FIRST_BYTE_MS);
      expect(check.finding).toMatch(/^ghost: a request for phi3:mini in flight for \d+ m?s \(timeouts\.staleRequestMs 300 ms\)$/);
      expect(check.nodes).toEqual(["ghost"]);
      client.abort();
      await pending;
      await until("zombie_requests", "ok");
    } finally {
      await ghost.stop();
    }
  });

  test("request_timeouts: a request failed for want of a first byte within timeouts.firstByteMs is a warning", async () => {
    const ghost = reporting("ghost", hangSim.url, ["phi3:mini"]);
    try {
      const res = await chat("phi3:mini");
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toMatch(/tried ghost: no answer within [\d.]+ ms/);
      const check = await until("request_timeouts", "warning");
      expect(check.finding).toBe("1 request(s) timed out in the last hour: phi3:mini 1");
    } finally {
      await ghost.stop();
    }
  });
});

describe("a node that fails every request (node flaky: Ollama answers 500)", () => {
  test("error_rate: a model whose every request failed in the last hour is critical; embeddings are not counted", async () => {
    const flaky = reporting("flaky", flakySim.url, ["llama3.1:8b"]);
    try {
      for (let i = 0; i < 5; i++) expect((await chat("llama3.1:8b")).status).toBe(503);
      const check = await until("error_rate", "critical");
      expect(check.finding).toBe("llama3.1:8b: 5 of 5 requests failed in the last hour (100%)");
      expect(check.details.problems).toHaveLength(1); // llama3.2:3b's completed requests do not count
    } finally {
      await flaky.stop();
    }
  });

  test("retry_rate: every request answered only after the first node failed it is a warning", async () => {
    // flaky claims gemma3:4b loaded, so it is tried first; mac has it on disk and answers.
    const flaky = reporting("flaky", flakySim.url, ["gemma3:4b"]);
    try {
      await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "flaky")?.status === "online", 2000, "flaky online");
      for (let i = 0; i < 5; i++) {
        const res = await chat("gemma3:4b");
        expect([res.status, res.headers.get("x-fleet-node"), res.headers.get("x-fleet-retries")]).toEqual([200, "mac", "1"]);
        await res.json();
      }
      const check = await until("retry_rate", "warning");
      expect(check.finding).toBe("gemma3:4b: 5 retries over 5 requests in the last hour (1.0 per request)");
    } finally {
      await flaky.stop();
    }
  });

  test("embed_error_rate: failed embeddings in the last hour are critical at 25% and over, whatever the backend", async () => {
    const flaky = reporting("flaky", flakySim.url, ["mxbai-embed-large"]);
    try {
      await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "flaky")?.status === "online", 2000, "flaky online");
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${router.url}/api/embed`, { method: "POST", body: JSON.stringify({ model: "mxbai-embed-large", input: "hello" }) });
        expect(res.status).toBe(503);
      }
      const check = await until("embed_error_rate", "critical");
      expect(check.finding).toBe("5 of 5 embedding requests failed in the last hour (100%): mxbai-embed-large 5");
      const errorRate = (await health()).checks.find((c: any) => c.id === "error_rate");
      expect(errorRate.finding).not.toContain("mxbai-embed-large");
    } finally {
      await flaky.stop();
    }
  });
});
