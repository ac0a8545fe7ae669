// What clients' tags can make herd keep (issue 27, item 3), through a real router: the tags one request may
// carry, the distinct tags a day keeps (new ones past store.traces.maxTagsPerDay are kept as "other"), the daily
// roll-ups held to their share of store.traces.maxMb so they never starve the traces, and what the per-tag
// dashboard routes answer whatever the store holds.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { STORE_FILE, openStore } from "../src/store/db.ts";
import { usedBytes } from "../src/store/retention.ts";
import { type Trace, TraceWriter } from "../src/store/traces.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const MODEL = "llama3.2:3b";
const DAY_S = 86_400;
const MB = 1024 * 1024;

let sim: SimNode;
afterAll(cleanupFile);
afterAll(async () => {
  await sim?.stop();
});
beforeAll(async () => {
  sim = await startSimOllama({ id: "n1", models: [MODEL], loaded: [MODEL], tokensPerSecond: 1_000_000, loadTimeMs: 0 });
});

/** A router over the sim node, with `store` as its store section, on `dataDir`. */
async function router(store: string, dataDir = join(tmpDir(), "data")) {
  const file = join(tmpDir(), "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "n1", ollama: "${sim.url}" }], store: ${store} };\n`);
  const r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir]);
  await eventually(async () => (await getJson(`${r.url}/fleet/status`)).fleet.nodes_online === 1, 5000, "n1 online");
  return { ...r, dataDir };
}

const chat = (url: string, tags: string[], headerTags: string[] = []) =>
  fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(headerTags.length ? { "x-herd-tags": headerTags.join(",") } : {}) },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], stream: false, metadata: { tags } }),
  });

/** Every trace the router keeps (up to 1000), once `count` of them are written. */
const tracesOnceWritten = (url: string, count: number) =>
  eventually(async () => {
    const { traces } = await getJson(`${url}/dashboard/api/traces?limit=1000`);
    return traces.length >= count && (traces as Trace[]);
  }, 10_000, `${count} traces written`);

describe("tags per request", () => {
  test("at most 32 tags in all: metadata.tags, X-Herd-Tags and user together; past it a 400 naming them", async () => {
    const { url } = await router("{}");
    const body = Array.from({ length: 20 }, (_, i) => `body-${i}`);
    const header = Array.from({ length: 20 }, (_, i) => `header-${i}`);
    const res = await chat(url, body, header);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("tags: at most 32 in all from metadata.tags, X-Herd-Tags and user (got 40)");
    // The same tag twice counts once, and 32 in all are taken.
    const ok = await chat(url, body, [...header.slice(0, 12), "body-0"]);
    expect(ok.status).toBe(200);
    await ok.text();
  });
});

describe("distinct tags per day", () => {
  test("past store.traces.maxTagsPerDay (1000) a new tag is kept as \"other\", once per request; tags already kept that day stay by name; the log says so once", async () => {
    const { url, output } = await router("{}");
    // 40 requests of 32 new tags each: 1280 distinct tags in one day.
    for (let i = 0; i < 40; i++) {
      const res = await chat(url, Array.from({ length: 32 }, (_, j) => `app-${i}-${j}`));
      expect(res.status).toBe(200);
      await res.text();
    }
    const again = await chat(url, ["app-0-0", "brand-new"]);
    expect(again.status).toBe(200);
    await again.text();
    const traces = await tracesOnceWritten(url, 41);
    const named = new Set(traces.flatMap((t) => t.tags).filter((tag) => tag !== "other"));
    expect(named.size).toBe(1000);
    const newest = traces[0]!;
    expect(newest.tags.toSorted()).toEqual(["app-0-0", "other"]);
    // Past the cap, a request of 32 new tags has the one "other".
    expect(traces.filter((t) => t.tags.join() === "other").length).toBeGreaterThan(0);
    const other = (await getJson(`${url}/dashboard/api/apps?days=1`)).by_tag.find((r: any) => r.tag === "other");
    expect(other.request_count).toBeGreaterThan(0);
    expect(output().match(/1000 distinct tags/g)).toHaveLength(1);
  }, 60_000);
});

/** A copy of a store's folder, once the trace thread's connection has closed (its WAL files go as it closes). */
async function copyStore(from: string, to: string): Promise<void> {
  const file = join(from, STORE_FILE);
  await eventually(async () => !existsSync(`${file}-wal`) && !existsSync(`${file}-shm`), 10_000, "the seeded store closed");
  cpSync(from, to, { recursive: true });
}

/** Traces of the last ten days with 32 long tags each, all distinct: a store a client's tags grew (here, with a day's retention, mostly roll-ups). */
async function dataDirWithTagHistory(): Promise<string> {
  const dataDir = join(tmpDir(), "data");
  const db = openStore(dataDir);
  const writer = new TraceWriter(join(dataDir, STORE_FILE), () => true, () => ({ maxAgeDays: 1, maxMb: 0, maxTagsPerDay: 0 }));
  const now = Date.now() / 1000;
  const base: Omit<Trace, "request_id" | "timestamp" | "tags"> = {
    model: MODEL, original_model: MODEL, node_id: "n1", backend: "ollama", kind: "chat", original_format: "ollama", stream: false,
    status: "completed", score: null, scores_breakdown: null, predicted_ms: null, prediction_breakdown: null, latency_ms: 100, time_to_first_token_ms: 10, queue_wait_ms: 0,
    prompt_tokens: 5, completion_tokens: 7, retry_count: 0, fallback_used: false, excluded_nodes: [], client_ip: null,
    error_message: null, resolution: null, adjustments: [],
  };
  for (let i = 0; i < 2000; i++) {
    const tags = Array.from({ length: 32 }, (_, j) => `${i}-${j}-${"t".repeat(240)}`);
    writer.record({ ...base, request_id: `seed-${i}`, timestamp: now - 10 * DAY_S + i * ((10 * DAY_S) / 2000), tags });
  }
  await writer.close();
  db.close();
  return dataDir;
}

describe("the daily roll-ups", () => {
  let seeded = "";
  beforeAll(async () => {
    seeded = await dataDirWithTagHistory();
  }, 120_000);

  test("are held to a quarter of store.traces.maxMb, oldest days first: the traces keep the rest, none is pruned as it is written", async () => {
    const dataDir = join(tmpDir(), "small");
    await copyStore(seeded, dataDir);
    // No cap on the day's tags: the seeded day already holds more than 1000, and "fresh" would be kept as "other".
    const r = await router("{ traces: { maxMb: 2, maxTagsPerDay: 0 } }", dataDir);
    for (let i = 0; i < 20; i++) {
      const res = await chat(r.url, ["fresh"]);
      expect(res.status).toBe(200);
      await res.text();
    }
    const traces = await tracesOnceWritten(r.url, 20);
    await Bun.sleep(500); // a prune after the last write would have taken them by now
    const kept = (await getJson(`${r.url}/dashboard/api/traces?limit=1000`)).traces.filter((t: Trace) => t.tags.includes("fresh"));
    expect(kept.length).toBe(20);
    expect(traces.length).toBeGreaterThanOrEqual(20);
    await r.stop();
    const db = new Database(join(dataDir, STORE_FILE), { readonly: true });
    expect(usedBytes(db)).toBeLessThanOrEqual(2 * MB);
    db.close();
  }, 60_000);

  test("/dashboard/api/apps lists at most 100 tags and /apps/daily 20 per day, the rest summed under \"other\", whatever the store holds", async () => {
    const dataDir = join(tmpDir(), "whole");
    await copyStore(seeded, dataDir);
    const { url } = await router("{ traces: { maxMb: 0 } }", dataDir);
    const res = await fetch(`${url}/dashboard/api/apps?days=30`);
    const text = await res.text();
    const { by_tag } = JSON.parse(text);
    expect(by_tag.length).toBe(101);
    expect(by_tag.at(-1).tag).toBe("other");
    expect(text.length).toBeLessThan(64 * 1024);
    // Every tag-request is counted once: the listed tags and "other" together.
    const total = by_tag.reduce((n: number, r: any) => n + r.request_count, 0);
    expect(total).toBe((await getJson(`${url}/dashboard/api/overview`)).total_requests * 32);
    const daily = await fetch(`${url}/dashboard/api/apps/daily?days=30`);
    const rows = JSON.parse(await daily.text()).daily as { tag: string; day: string }[];
    const perDay = Map.groupBy(rows, (r) => r.day);
    expect(perDay.size).toBeGreaterThanOrEqual(10);
    for (const day of perDay.values()) expect(day.length).toBeLessThanOrEqual(21);
    expect(rows.some((r) => r.tag === "other")).toBe(true);
  }, 60_000);
});
