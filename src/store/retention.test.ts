import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { migrate } from "./db.ts";
import { ROLLUP_SHARE, TAG_DAY_BYTES, tracePruner, usedBytes } from "./retention.ts";
import { type Trace, traceInserter } from "./traces.ts";

const DAY_S = 86_400;
const NOW = 100 * DAY_S;

function storeWith(traces: Trace[]): Database {
  const db = new Database(":memory:", { strict: true });
  migrate(db);
  traceInserter(db)(traces, 0);
  return db;
}

const trace = (i: number, timestamp: number, fields: Partial<Trace> = {}): Trace => ({
  request_id: `r${i}`, timestamp, model: "qwen3:8b", original_model: "qwen3:8b", node_id: "mini", backend: "ollama", kind: "chat",
  original_format: "ollama", stream: false, status: "completed", score: null, scores_breakdown: null, predicted_ms: null, prediction_breakdown: null, latency_ms: 100,
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
  expect(tracePruner(db)({ maxAgeDays: 2, maxMb: 0, maxTagsPerDay: 0 }, NOW)).toBe(3);
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
  expect(prune({ maxAgeDays: 0, maxMb: 0, maxTagsPerDay: 0 }, NOW)).toBe(0);
  traceInserter(db)([trace(3, NOW - 3 * DAY_S + 2)], 0);
  expect(prune({ maxAgeDays: 1, maxMb: 0, maxTagsPerDay: 0 }, NOW)).toBe(3);
  expect(db.query("SELECT requests FROM trace_days").all()).toEqual([{ requests: 3 }]);
});

test("over maxMb, the oldest traces go until the store's data fits, the newest stay", () => {
  const db = storeWith(Array.from({ length: 3000 }, (_, i) => trace(i, NOW - 3000 + i, { error_message: "x".repeat(200) })));
  const before = usedBytes(db);
  const maxMb = before / 2 / (1024 * 1024);
  const pruned = tracePruner(db)({ maxAgeDays: 0, maxMb, maxTagsPerDay: 0 }, NOW);
  expect(pruned).toBeGreaterThan(1000);
  expect(usedBytes(db)).toBeLessThanOrEqual(maxMb * 1024 * 1024);
  expect(db.query("SELECT MAX(timestamp) AS t FROM traces").get()).toEqual({ t: NOW - 1 });
  expect(db.query<{ n: number }, []>("SELECT SUM(requests) AS n FROM trace_days").get()!.n + count(db, "traces")).toBe(3000);
});

test("the roll-ups are held to a quarter of maxMb, the tags' oldest days first, so the traces keep the rest", () => {
  const db = storeWith([]);
  const tagDay = db.prepare("INSERT INTO tag_days VALUES (?, ?, 1, 0, 1, 1, 1, 1, 1, 1)");
  db.transaction(() => {
    for (let d = 1; d <= 20; d++) for (let i = 0; i < 500; i++) tagDay.run(`1970-01-${String(d).padStart(2, "0")}`, `${i}-${"t".repeat(200)}`);
  })();
  db.run("INSERT INTO trace_days VALUES ('1970-01-01', 'mini', 'qwen3:8b', 1, 1, 1, 1, 1, 1, 1)");
  const before = usedBytes(db);
  expect(before).toBeGreaterThan(4 * 1024 * 1024);
  const maxMb = 4;
  tracePruner(db)({ maxAgeDays: 0, maxMb, maxTagsPerDay: 0 }, NOW);
  expect(usedBytes(db)).toBeLessThanOrEqual(maxMb * ROLLUP_SHARE * 1024 * 1024);
  const days = db.query<{ day: string }, []>("SELECT DISTINCT day FROM tag_days ORDER BY day").all().map((r) => r.day);
  expect(days.length).toBeGreaterThan(0);
  expect(days.at(-1)).toBe("1970-01-20"); // the newest days stay
  expect(count(db, "trace_days")).toBe(1); // the per-model history outlasts the tags
});

// dbstat is a compile-time option of SQLite: Bun's own SQLite has it; a system SQLite may not.
const hasDbstat = (() => {
  try {
    new Database(":memory:").query("SELECT 1 FROM dbstat LIMIT 1").all();
    return true;
  } catch {
    return false;
  }
})();

test.skipIf(!hasDbstat)("the roll-ups' estimate of their bytes is within a fifth of what SQLite's dbstat measures", () => {
  const db = storeWith([]);
  const tagDay = db.prepare("INSERT INTO tag_days VALUES (?, ?, 12345, 3, 456789, 1234567, 12345.6, 12345, 2345.5, 12345)");
  db.transaction(() => {
    for (let i = 0; i < 5000; i++) tagDay.run(`1970-01-${String((i % 28) + 1).padStart(2, "0")}`, `${i}-${"t".repeat(i % 250)}`);
  })();
  const measured = db.query<{ b: number }, []>("SELECT SUM(pgsize) AS b FROM dbstat WHERE name IN ('tag_days', 'sqlite_autoindex_tag_days_1')").get()!.b;
  const estimated = db.query<{ b: number }, []>(`SELECT SUM(${TAG_DAY_BYTES}) AS b FROM tag_days`).get()!.b;
  expect(Math.abs(estimated / measured - 1)).toBeLessThan(0.2);
});
