// The benchmark APIs through a real router over simulated nodes: runs saved and
// listed in seed 000's shape, and runs started from the dashboard that drive real
// requests through herd's own routes, report progress, and are stored (or, when
// cancelled, not).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveConfig } from "../src/config/live.ts";
import { postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const API = "/dashboard/api/benchmarks";
const SEED_RUN = {
  run_id: "bench-1772966095",
  timestamp: 1710000000.0,
  duration_s: 300.0,
  total_requests: 150,
  total_failures: 0,
  total_prompt_tokens: 18750,
  total_completion_tokens: 52500,
  requests_per_sec: 0.5,
  tokens_per_sec: 175.0,
  latency_p50_ms: 2100.0,
  latency_p95_ms: 4500.0,
  latency_p99_ms: 6200.0,
  ttft_p50_ms: 450.0,
  ttft_p95_ms: 1200.0,
  ttft_p99_ms: 1800.0,
  fleet_snapshot: "{}",
  per_model_results: "[]",
  per_node_results: "[]",
  peak_utilization: "[]",
};

let url = "";
const sims: SimNode[] = [];

beforeAll(async () => {
  sims.push(
    await startSimOllama({ id: "a", models: ["llama3.2:3b", "nomic-embed-text"], loaded: ["llama3.2:3b", "nomic-embed-text"] }),
    await startSimOllama({ id: "b", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }),
  );
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  // Alike Macs, declared alike: a node herd has not timed yet is then taken to be as fast as the one it has.
  const nodes = sims.map((s) => ({ id: s.id, ollama: s.url, hardware: { bandwidthGbps: 400 } }));
  writeFileSync(file, `export default { nodes: ${JSON.stringify(nodes)}, heartbeat: { intervalMs: 30000, timeoutMs: 60000, offlineMs: 120000 } };\n`);
  url = (await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")])).url;
  await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "both nodes online");
});

afterAll(async () => {
  await cleanupFile();
  await Promise.all(sims.map((s) => s.stop()));
});

const post = (path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method: "POST",
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
const progress = () => getJson(`${url}${API}/progress`);
const runs = async (query = "") => (await getJson(`${url}${API}${query}`)).data as any[];

/** Polls progress until the run leaves its active states; returns every status seen and the last progress. */
async function follow(timeoutMs = 20000) {
  const seen: string[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const p = await progress();
    if (seen.at(-1) !== p.status) seen.push(p.status);
    if (!["pulling", "warming_up", "running"].includes(p.status)) return { seen, last: p };
    if (Date.now() > deadline) throw new Error(`benchmark still ${p.status} after ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}

describe("saved runs", () => {
  test("a run posted in the seed's shape is listed back as it was sent, newest first; a run_id is never overwritten", async () => {
    const saved = await post(API, SEED_RUN);
    expect(saved.status).toBe(200);
    expect(await saved.json()).toEqual({ status: "saved", run_id: SEED_RUN.run_id });
    // Details may also be sent as the list or object itself; they are stored as JSON text.
    const newer = { ...SEED_RUN, run_id: "bench-newer", timestamp: SEED_RUN.timestamp + 60, per_model_results: [{ model: "x", requests: 1 }] };
    expect((await post(API, newer)).status).toBe(200);

    const listed = await runs();
    expect(listed.map((r) => r.run_id).slice(0, 2)).toEqual(["bench-newer", SEED_RUN.run_id]);
    expect(listed.find((r) => r.run_id === SEED_RUN.run_id)).toEqual(SEED_RUN);
    expect(listed[0].per_model_results).toBe('[{"model":"x","requests":1}]');
    expect((await runs("?limit=1")).map((r) => r.run_id)).toEqual(["bench-newer"]);

    const again = await post(API, { ...SEED_RUN, total_requests: 1 });
    expect(again.status).toBe(409);
    expect(((await again.json()) as any).error).toStartWith("run_id:");
    expect((await runs()).find((r) => r.run_id === SEED_RUN.run_id).total_requests).toBe(150);
  });

  test("bad bodies and bad limits are 400s naming the field", async () => {
    const cases: [unknown, string][] = [
      [{ ...SEED_RUN, run_id: undefined }, "run_id: required"],
      [{ ...SEED_RUN, run_id: " " }, "run_id:"],
      [{ ...SEED_RUN, total_requests: "150" }, "total_requests:"],
      [{ ...SEED_RUN, total_failures: 1.5 }, "total_failures:"],
      [{ ...SEED_RUN, latency_p95_ms: -1 }, "latency_p95_ms:"],
      [{ ...SEED_RUN, fleet_snapshot: "{not json" }, "fleet_snapshot: expected valid JSON text"],
      [{ ...SEED_RUN, peak_utilization: 7 }, "peak_utilization:"],
      ["[1]", "invalid JSON body"],
      ["{", "invalid JSON body"],
    ];
    for (const [body, message] of cases) {
      const res = await post(API, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toContain(message);
    }
    for (const limit of ["0", "abc", "1001", "-1"]) {
      const res = await fetch(`${url}${API}?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toStartWith("limit: expected a whole number from 1 to 1000");
    }
  });
});

describe("runs started from the dashboard", () => {
  test("bad start bodies are 400s naming the field; nothing starts", async () => {
    const cases: [unknown, string][] = [
      [{ duration: 0 }, "duration: expected 1 to 3600 seconds"],
      [{ duration: 3601 }, "duration: expected 1 to 3600 seconds"],
      [{ duration: "2" }, "duration: expected a number of seconds"],
      [{ mode: "fast" }, 'mode: expected "default" or "smart"'],
      [{ model_types: ["audio"] }, "model_types[0]: expected one of"],
      [{ model_types: [] }, "model_types: expected at least one type"],
      [{ model_types: "llm" }, "model_types: expected a list of types"],
    ];
    for (const [body, message] of cases) {
      const res = await post(`${API}/start`, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toContain(message);
    }
    expect((await progress()).status).toBe("idle");
  });

  test("a 2 s run drives chat and embedding requests through the router, reports progress, and is stored", async () => {
    const before = (await runs()).length;
    const start = await post(`${API}/start`, { duration: 2, model_types: ["llm", "embed"] });
    expect(start.status).toBe(200);
    const started = (await start.json()) as any;
    expect(started).toEqual({ status: "started", run_id: expect.stringMatching(/^bench-/), mode: "default", duration: 2, model_types: ["llm", "embed"] });

    const busy = await post(`${API}/start`, { duration: 2 });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as any).error).toContain(started.run_id);

    const { seen, last } = await follow();
    expect(seen).toContain("running");
    expect(seen.at(-1)).toBe("complete");
    expect(last).toMatchObject({ run_id: started.run_id, duration: 2, error: null, models: ["llama3.2:3b", "nomic-embed-text:latest"] });
    expect(last.requests_completed).toBeGreaterThan(0);
    expect(last.tok_per_sec).toBeGreaterThan(0);

    const all = await runs();
    expect(all.length).toBe(before + 1);
    const run = all.find((r) => r.run_id === started.run_id);
    expect(run.total_requests).toBe(last.requests_completed + last.requests_failed);
    expect(run.total_requests).toBeGreaterThan(0);
    expect(run.total_failures).toBe(0);
    expect(run.duration_s).toBeGreaterThanOrEqual(2);
    expect(run.duration_s).toBeLessThan(10);
    expect(run.total_completion_tokens).toBeGreaterThan(0);
    expect(run.tokens_per_sec).toBeGreaterThan(0);
    expect(run.latency_p50_ms).toBeGreaterThan(0);
    expect(run.latency_p95_ms).toBeGreaterThanOrEqual(run.latency_p50_ms);
    expect(run.latency_p99_ms).toBeGreaterThanOrEqual(run.latency_p95_ms);
    expect(run.ttft_p50_ms).toBeGreaterThan(0);

    const perModel = JSON.parse(run.per_model_results);
    expect(perModel.map((m: any) => [m.model, m.type])).toEqual([["llama3.2:3b", "llm"], ["nomic-embed-text:latest", "embed"]]);
    expect(perModel[0].completion_tokens).toBeGreaterThan(0);
    expect(perModel[1].ttft_p50_ms).toBeNull(); // an embedding has no first token
    const perNode = JSON.parse(run.per_node_results);
    expect(perNode.map((n: any) => n.node_id)).toEqual(["a", "b"]);
    expect(perNode.reduce((sum: number, n: any) => sum + n.requests, 0)).toBe(run.total_requests);
    const peaks = JSON.parse(run.peak_utilization);
    expect(Math.max(...peaks.map((p: any) => p.peak_queue_depth))).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(run.fleet_snapshot)).toMatchObject({ mode: "default", model_types: ["llm", "embed"] });

    // The requests went through herd's own routes: traced, tagged as benchmark traffic (warm-up included).
    const tagged = await eventually(async () => {
      const tag = (await getJson(`${url}/dashboard/api/apps`)).by_tag.find((t: any) => t.tag === "benchmark");
      return tag?.request_count >= run.total_requests && tag;
    }, 3000, "the benchmark's traces");
    expect(tagged.request_count).toBeGreaterThanOrEqual(run.total_requests);
  });

  test("cancel stops a run and stores nothing; a second cancel finds nothing running; a new run can start", async () => {
    const before = (await runs()).length;
    const started = (await (await post(`${API}/start`, { duration: 60 })).json()) as any;
    await eventually(async () => (await progress()).status === "running", 5000, "the run to be running");
    const cancel = await post(`${API}/cancel`);
    expect(await cancel.json()).toEqual({ status: "cancelled" });
    expect(await progress()).toMatchObject({ status: "cancelled", run_id: started.run_id });
    expect(await (await post(`${API}/cancel`)).json()).toEqual({ status: "not_running" });
    expect((await runs()).length).toBe(before);
    expect((await runs()).some((r) => r.run_id === started.run_id)).toBe(false);

    // No body at all: every default (mode default, 300 s, llm).
    const next = await post(`${API}/start`);
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ status: "started", mode: "default", duration: 300, model_types: ["llm"] });
    expect(await (await post(`${API}/cancel`)).json()).toEqual({ status: "cancelled" });
  });

  test("types with no loaded model are skipped and said so; with nothing left to run the run is an error", async () => {
    const res = await post(`${API}/start`, { duration: 1, model_types: ["vision", "image"] });
    expect(res.status).toBe(200);
    const { seen, last } = await follow();
    expect(seen.at(-1)).toBe("error");
    expect(last.error).toContain("no model of the requested types (vision, image) is loaded");
    expect(last.error).toContain("vision: no such model loaded, skipped");
    expect(last.error).toContain("image: no online node offers an image model, skipped");
  });
});

describe("smart mode", () => {
  test("pulls what the recommender would put on the node, then benchmarks it", async () => {
    // Its own router and Mac: an agent reports the memory the recommender budgets with (with a credential: herd takes
    // a polled node's memory from no other heartbeat).
    const mac = await startSimOllama({ id: "mac", memoryGb: 24, models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] });
    sims.push(mac);
    const dir = tmpDir();
    const file = join(dir, "herd.config.ts");
    writeFileSync(file, `export default { nodes: [{ id: "mac", ollama: "${mac.url}", token: "bench-node-token" }] };\n`);
    const own = (await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")])).url;
    const live = await LiveConfig.open(null);
    const agent = startAgent({ nodeId: "mac", live, ollamaUrl: mac.url, send: postTo(own, 1000, () => "bench-node-token"), collector: simCollector(mac, { chip: "Apple M2", memoryBandwidthGbps: 100 }) });
    try {
      await agent.beat();
      await eventually(async () => (await getJson(`${own}/fleet/status`)).nodes[0]?.memory, 3000, "the agent's memory report");
      const start = await fetch(`${own}${API}/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ mode: "smart", duration: 1, model_types: ["embed"] }) });
      expect(await start.json()).toMatchObject({ status: "started", mode: "smart", model_types: ["embed"] });
      const seen: string[] = [];
      const last = await eventually(async () => {
        const p = await getJson(`${own}${API}/progress`);
        if (seen.at(-1) !== p.status) seen.push(p.status);
        return !["pulling", "warming_up", "running"].includes(p.status) && p;
      }, 20000, "the smart run to end");
      expect(seen[0]).toBe("pulling");
      // With its error, when it has one: what failed is then in the test's output.
      expect({ status: last.status, error: last.error }).toEqual({ status: "complete", error: null });
      // Only an embedding model was asked for, and none was on the disk: what ran is what was pulled.
      expect(last.models_pulled.length).toBeGreaterThan(0);
      expect(last.models).toEqual(last.models_pulled);
      for (const model of last.models_pulled) expect(mac.state().models).toContain(model);
      expect(last.phase).toContain(`smart mode: ${last.models_pulled.length} model(s) pulled`);
      expect(last.requests_completed).toBeGreaterThan(0);
    } finally {
      agent.stop();
    }
  });
});
