import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { migrate } from "./db.ts";
import { tracePruner, usedBytes } from "./retention.ts";
import { type Trace, traceInserter } from "./traces.ts";

const DAY_S = 86_400;
const NOW = 100 * DAY_S;

function storeWith(traces: Trace[]): Database {
  const db = new Database(":memory:", { strict: true });
  migrate(db);
  traceInserter(db)(traces);
  return db;
}

const trace = (i: number, timestamp: number, fields: Partial<Trace> = {}): Trace => ({
  request_id: `r${i}`, timestamp, model: "qwen3:8b", original_model: "qwen3:8b", node_id: "mini", backend: "ollama", kind: "chat",
  original_format: "ollama", stream: false, status: "completed", score: null, scores_breakdown: null, latency_ms: 100,
  time_to_first_token_ms: 10, queue_wait_ms: 0, prompt_tokens: 5, completion_tokens: 7, retry_count: 0, fallback_used: false,
  excluded_nodes: [], client_ip: null, error_message: null, tags: ["app"], resolution: null, adjustments: [], ...fields,
});

const count = (db: Database, table: string) => db.query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM ${table}`).get()!.n;

test("traces older than maxAgeDays are summed per day, node and model, then deleted with their tags", () => {
  const db = storeWith([
    trace(1, NOW - 3 * DAY_S),
    trace(2, NOW - 3 * DAY_S + 60, { status: "failed", latency_ms: null, prompt_tokens: null, completion_tokens: null }),
    trace(3, NOW - 3 * DAY_S + 120, { node_id: null, model: "made-up-name", status: "rejected" }),
    trace(4, NOW - 60),
  ]);
  expect(tracePruner(db)({ maxAgeDays: 2, maxMb: 0 }, NOW)).toBe(3);
  expect(db.query("SELECT request_id FROM traces").all()).toEqual([{ request_id: "r4" }]);
  expect(count(db, "trace_tags")).toBe(1);
  expect(db.query("SELECT * FROM trace_days ORDER BY node_id").all()).toEqual([
    // A name nothing served is whatever the client sent: its day is kept under one bucket.
    { day: "1970-04-08", node_id: "", model: "other", requests: 1, completed: 0, prompt_tokens: 5, completion_tokens: 7, latency_sum: 100, latency_count: 1, last_used: NOW - 3 * DAY_S + 120 },
    { day: "1970-04-08", node_id: "mini", model: "qwen3:8b", requests: 2, completed: 1, prompt_tokens: 5, completion_tokens: 7, latency_sum: 100, latency_count: 1, last_used: NOW - 3 * DAY_S + 60 },
  ]);
  expect(db.query("SELECT tag, requests, failed FROM tag_days").all()).toEqual([{ tag: "app", requests: 3, failed: 2 }]);
});

test("a later prune adds to the day already rolled up; maxAgeDays 0 keeps every age", () => {
  const db = storeWith([trace(1, NOW - 3 * DAY_S), trace(2, NOW - 3 * DAY_S + 1)]);
  const prune = tracePruner(db);
  expect(prune({ maxAgeDays: 0, maxMb: 0 }, NOW)).toBe(0);
  traceInserter(db)([trace(3, NOW - 3 * DAY_S + 2)]);
  expect(prune({ maxAgeDays: 1, maxMb: 0 }, NOW)).toBe(3);
  expect(db.query("SELECT requests FROM trace_days").all()).toEqual([{ requests: 3 }]);
});

test("over maxMb, the oldest traces go until the store's data fits, the newest stay", () => {
  const db = storeWith(Array.from({ length: 3000 }, (_, i) => trace(i, NOW - 3000 + i, { error_message: "x".repeat(200) })));
  const before = usedBytes(db);
  const maxMb = before / 2 / (1024 * 1024);
  const pruned = tracePruner(db)({ maxAgeDays: 0, maxMb }, NOW);
  expect(pruned).toBeGreaterThan(1000);
  expect(usedBytes(db)).toBeLessThanOrEqual(maxMb * 1024 * 1024);
  expect(db.query("SELECT MAX(timestamp) AS t FROM traces").get()).toEqual({ t: NOW - 1 });
  expect(db.query<{ n: number }, []>("SELECT SUM(requests) AS n FROM trace_days").get()!.n + count(db, "traces")).toBe(3000);
});
