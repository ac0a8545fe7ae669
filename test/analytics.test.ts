// The dashboard's analytics APIs over a store that already has history: traces
// are written with the project's own TraceWriter before a real router starts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { STORE_FILE, openStore } from "../src/store/db.ts";
import { type Trace, TraceWriter } from "../src/store/traces.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const LLAMA = "llama3.3:70b";
const QWEN = "qwen3:8b";
const DAY_S = 86400;
const NOW = Date.now() / 1000;
// The start of a UTC day two or three days back, so a day boundary falls between traces and none is in the future.
const T = Math.floor((NOW - 2 * DAY_S) / DAY_S) * DAY_S;

const dayOf = (ts: number) => new Date(ts * 1000).toISOString().slice(0, 10);
const hourOf = (ts: number) => `${new Date(ts * 1000).toISOString().slice(0, 13).replace("T", " ")}:00:00`;
const [D0, D1, D2] = [dayOf(T - 1), dayOf(T), dayOf(NOW - 60)];

const BREAKDOWN = { model_thermal: 50, memory_fit: 20, queue_depth: 0, wait_time: 0, role_affinity: 15 };
const PREDICTION = { wait_ms: 0, load_ms: 0, reload_ms: 0, evict_ms: 0, prefill_ms: 12.5, decode_ms: 400 };
const base: Omit<Trace, "request_id" | "timestamp"> = {
  model: LLAMA, original_model: LLAMA, node_id: "studio", backend: "ollama", kind: "chat", original_format: "openai", stream: true,
  status: "completed", score: 73, scores_breakdown: BREAKDOWN, predicted_ms: null, prediction_breakdown: null, latency_ms: null, time_to_first_token_ms: null, queue_wait_ms: 0,
  prompt_tokens: null, completion_tokens: null, retry_count: 0, fallback_used: false, excluded_nodes: [], client_ip: "10.0.0.50",
  error_message: null, tags: [], resolution: null, adjustments: [],
};
const t = (request_id: string, timestamp: number, fields: Partial<Trace>): Trace => ({ ...base, request_id, timestamp, ...fields });

// Written out of time order, so newest-first is the query's doing.
const TRACES = [
  t("b", T + 600, { latency_ms: 2000, time_to_first_token_ms: 300, prompt_tokens: 20, completion_tokens: 200, tags: ["chat"] }),
  t("old", NOW - 10 * DAY_S, { latency_ms: 9000, time_to_first_token_ms: 900, prompt_tokens: 1000, completion_tokens: 1000, tags: ["chat"] }),
  t("a", T - 1800, { latency_ms: 1000, time_to_first_token_ms: 100, prompt_tokens: 10, completion_tokens: 100, tags: ["chat", "prod"] }),
  t("c", T + 1200, { status: "failed", latency_ms: 500, error_message: "node studio failed: connection reset", tags: ["chat"] }),
  t("d", T + 3000.25, {
    model: QWEN, original_model: "qwen3:32b", node_id: "mini", score: 61.5, latency_ms: 300, time_to_first_token_ms: 50, prompt_tokens: 5,
    completion_tokens: 15, retry_count: 1, fallback_used: true, excluded_nodes: ["studio"], tags: ["batch"], predicted_ms: 412.5, prediction_breakdown: PREDICTION,
  }),
  t("e", T + 3700, { model: QWEN, original_model: QWEN, node_id: "mini", status: "client_disconnected", latency_ms: 800, time_to_first_token_ms: 60, prompt_tokens: 7, completion_tokens: 3 }),
  t("f", NOW - 60, { node_id: null, backend: null, status: "rejected", score: null, scores_breakdown: null, error_message: "queue full", tags: ["prod"] }),
];

let url = "";
/** A router over a copy of the same history that keeps one day of traces (store.traces.maxAgeDays: 1). */
let prunedUrl = "";
afterAll(cleanupFile);

beforeAll(async () => {
  const dir = tmpDir();
  const dataDir = join(dir, "data");
  const db = openStore(dataDir);
  const writer = new TraceWriter(join(dataDir, STORE_FILE), () => true, () => ({ maxAgeDays: 0, maxMb: 0, maxTagsPerDay: 0 }));
  for (const trace of TRACES) writer.record(trace);
  await writer.close();
  db.close();
  // A consistent copy of the store, whatever the trace writer's thread still has open (a directory copy can race its WAL file).
  mkdirSync(join(dir, "pruned"));
  const source = new Database(join(dataDir, STORE_FILE));
  source.exec(`VACUUM INTO '${join(dir, "pruned", STORE_FILE)}'`);
  source.close();
  writeFileSync(join(dir, "herd.config.ts"), "export default { nodes: [] };\n");
  writeFileSync(join(dir, "pruned.config.ts"), "export default { nodes: [], store: { traces: { maxAgeDays: 1 } } };\n");
  const args = (config: string, data: string) => ["serve", "--config", join(dir, config), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, data)];
  // A router in UTC+5:30 must still group by UTC days and hours.
  [url, prunedUrl] = (await Promise.all([
    startRouterProcess(args("herd.config.ts", "data"), { env: { TZ: "IST-5:30" } }),
    startRouterProcess(args("pruned.config.ts", "pruned"), { env: { TZ: "IST-5:30" } }),
  ])).map((r) => r.url);
});

const api = (path: string) => getJson(`${url}/dashboard/api/${path}`);

describe("GET /dashboard/api/traces", () => {
  test("lists every trace newest first by default, and the newest `limit` when asked", async () => {
    const all = await api("traces");
    expect(all.traces.map((x: any) => x.request_id)).toEqual(["f", "e", "d", "c", "b", "a", "old"]);
    const three = await api("traces?limit=3");
    expect(three.traces.map((x: any) => x.request_id)).toEqual(["f", "e", "d"]);
  });

  test("decodes the JSON columns and keeps fallback_used as 0/1, in the spec's fields", async () => {
    const byId = Object.fromEntries((await api("traces")).traces.map((x: any) => [x.request_id, x]));
    expect(byId.d).toEqual({
      request_id: "d", model: QWEN, original_model: "qwen3:32b", node_id: "mini", score: 61.5, scores_breakdown: BREAKDOWN,
      predicted_ms: 412.5, prediction_breakdown: PREDICTION,
      status: "completed", latency_ms: 300, time_to_first_token_ms: 50, prompt_tokens: 5, completion_tokens: 15, retry_count: 1,
      fallback_used: 1, excluded_nodes: ["studio"], client_ip: "10.0.0.50", original_format: "openai", error_message: null,
      timestamp: T + 3000.25, tags: ["batch"], resolution: null, adjustments: [],
    });
    expect(byId.f).toMatchObject({ node_id: null, score: null, scores_breakdown: null, predicted_ms: null, prediction_breakdown: null, status: "rejected", fallback_used: 0, error_message: "queue full", tags: ["prod"] });
    expect(byId.a.tags).toEqual(["chat", "prod"]);
  });
});

test("GET /dashboard/api/overview totals all history, with distinct models, and says what the store holds", async () => {
  const { store, ...totals } = await api("overview");
  expect(totals).toEqual({
    total_requests: 7, total_prompt_tokens: 1042, total_completion_tokens: 1318, total_tokens: 2360, models_count: 2,
  });
  expect(store).toMatchObject({ traces: 7, oldest: NOW - 10 * DAY_S, max_age_days: 30, max_mb: 1024 });
  expect(store.bytes).toBeGreaterThan(0);
});

test("GET /dashboard/api/usage groups by node, model and UTC day; anything not completed is failed", async () => {
  const row = (node_id: string | null, model: string, day: string, counts: number[], avg: number | null, tokens: number[]) => ({
    node_id, model, day, request_count: counts[0], completed: counts[1], failed: counts[2], avg_latency_ms: avg,
    total_prompt_tokens: tokens[0], total_completion_tokens: tokens[1],
  });
  const week = [
    row("studio", LLAMA, D0, [1, 1, 0], 1000, [10, 100]),
    row("mini", QWEN, D1, [2, 1, 1], 550, [12, 18]),
    row("studio", LLAMA, D1, [2, 1, 1], 1250, [20, 200]),
    row(null, LLAMA, D2, [1, 0, 1], null, [0, 0]),
  ];
  expect(await api("usage")).toEqual({ days: 7, data: week });
  expect(await api("usage?days=30")).toEqual({ days: 30, data: [row("studio", LLAMA, dayOf(NOW - 10 * DAY_S), [1, 1, 0], 9000, [1000, 1000]), ...week] });
});

test("GET /dashboard/api/models gives each model's days and a summary, busiest first", async () => {
  expect(await api("models")).toEqual({
    days: 7,
    daily: [
      { model: LLAMA, day: D0, request_count: 1, avg_latency_ms: 1000, total_prompt_tokens: 10, total_completion_tokens: 100 },
      { model: LLAMA, day: D1, request_count: 2, avg_latency_ms: 1250, total_prompt_tokens: 20, total_completion_tokens: 200 },
      { model: QWEN, day: D1, request_count: 2, avg_latency_ms: 550, total_prompt_tokens: 12, total_completion_tokens: 18 },
      { model: LLAMA, day: D2, request_count: 1, avg_latency_ms: null, total_prompt_tokens: 0, total_completion_tokens: 0 },
    ],
    summary: [
      { model: LLAMA, total_requests: 4, avg_latency_ms: 1166.7, total_prompt_tokens: 30, total_completion_tokens: 300 },
      { model: QWEN, total_requests: 2, avg_latency_ms: 550, total_prompt_tokens: 12, total_completion_tokens: 18 },
    ],
  });
});

test("GET /dashboard/api/trends buckets by UTC hour within the last `hours`", async () => {
  expect(await api("trends?hours=96")).toEqual({
    hours: 96,
    data: [
      { hour_bucket: `${D0} 23:00:00`, request_count: 1, avg_latency_ms: 1000, avg_prompt_tokens: 10, avg_completion_tokens: 100 },
      { hour_bucket: `${D1} 00:00:00`, request_count: 3, avg_latency_ms: 933.3, avg_prompt_tokens: 12.5, avg_completion_tokens: 107.5 },
      { hour_bucket: `${D1} 01:00:00`, request_count: 1, avg_latency_ms: 800, avg_prompt_tokens: 7, avg_completion_tokens: 3 },
      { hour_bucket: hourOf(NOW - 60), request_count: 1, avg_latency_ms: null, avg_prompt_tokens: null, avg_completion_tokens: null },
    ],
  });
  expect((await api("trends?hours=1")).data.map((b: any) => b.hour_bucket)).toEqual([hourOf(NOW - 60)]);
  const byDefault = await api("trends");
  expect(byDefault.hours).toBe(72);
  expect(byDefault.data.map((b: any) => b.hour_bucket)).toContain(`${D1} 00:00:00`);
});

describe("GET /dashboard/api/apps", () => {
  test("per tag: a trace with two tags counts under both; untagged traces under none", async () => {
    expect(await api("apps")).toEqual({
      days: 7,
      by_tag: [
        { tag: "chat", request_count: 3, avg_latency_ms: 1166.7, avg_ttft_ms: 200, total_prompt_tokens: 30, total_completion_tokens: 300, error_rate: 0.3333 },
        { tag: "prod", request_count: 2, avg_latency_ms: 1000, avg_ttft_ms: 100, total_prompt_tokens: 10, total_completion_tokens: 100, error_rate: 0.5 },
        { tag: "batch", request_count: 1, avg_latency_ms: 300, avg_ttft_ms: 50, total_prompt_tokens: 5, total_completion_tokens: 15, error_rate: 0 },
      ],
    });
    const month = await api("apps?days=30");
    expect(month.by_tag.find((x: any) => x.tag === "chat")).toMatchObject({ request_count: 4, error_rate: 0.25 });
  });

  test("daily: per tag and UTC day", async () => {
    expect(await api("apps/daily")).toEqual({
      days: 7,
      daily: [
        { tag: "chat", day: D0, request_count: 1, avg_latency_ms: 1000, total_tokens: 110 },
        { tag: "prod", day: D0, request_count: 1, avg_latency_ms: 1000, total_tokens: 110 },
        { tag: "batch", day: D1, request_count: 1, avg_latency_ms: 300, total_tokens: 20 },
        { tag: "chat", day: D1, request_count: 2, avg_latency_ms: 1250, total_tokens: 220 },
        { tag: "prod", day: D2, request_count: 1, avg_latency_ms: null, total_tokens: 0 },
      ],
    });
  });
});

test("bad query parameters are a 400 naming the parameter; the caps themselves are fine", async () => {
  const bad: [string, string, string, number][] = [
    ["traces", "limit", "abc", 1000], ["traces", "limit", "0", 1000], ["traces", "limit", "1001", 1000],
    ["usage", "days", "-1", 365], ["models", "days", "366", 365], ["apps", "days", "1.5", 365], ["apps/daily", "days", "", 365],
    ["trends", "hours", "0", 8760], ["trends", "hours", "8761", 8760],
  ];
  for (const [path, name, raw, max] of bad) {
    const res = await fetch(`${url}/dashboard/api/${path}?${name}=${raw}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: `${name}: expected a whole number from 1 to ${max}, got ${JSON.stringify(raw)}` });
  }
  for (const ok of ["traces?limit=1000", "usage?days=365", "trends?hours=8760"]) expect((await fetch(`${url}/dashboard/api/${ok}`)).status).toBe(200);
});

describe("store.traces retention", () => {
  test("traces past maxAgeDays are pruned at start; every daily and all-time figure is the same from the days rolled up", async () => {
    const kept = await eventually(async () => {
      const { traces } = await getJson(`${prunedUrl}/dashboard/api/traces`);
      return traces.length === 1 && traces;
    }, 10_000, "the traces older than a day pruned");
    expect(kept.map((x: any) => x.request_id)).toEqual(["f"]);
    for (const path of ["usage", "usage?days=30", "models", "models?days=30", "apps", "apps?days=30", "apps/daily"]) {
      expect({ path, answer: await getJson(`${prunedUrl}/dashboard/api/${path}`) }).toEqual({ path, answer: await api(path) });
    }
    const { store, ...totals } = await getJson(`${prunedUrl}/dashboard/api/overview`);
    const { store: _, ...unpruned } = await api("overview");
    expect(totals).toEqual(unpruned);
    expect(store).toMatchObject({ traces: 1 });
    expect(store.bytes).toBeGreaterThan(0);
  });
});
