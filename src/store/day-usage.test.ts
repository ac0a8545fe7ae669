import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { migrate } from "./db.ts";
import { dayUsage } from "./day-usage.ts";

const START = Date.parse("2026-04-19T00:00:00Z") / 1000;

function store() {
  const db = new Database(":memory:");
  migrate(db);
  const trace = db.query(`INSERT INTO traces (request_id, timestamp, model, original_model, node_id, kind, original_format, stream, status, latency_ms, prompt_tokens, completion_tokens)
    VALUES (?, ?, ?, ?, ?, 'chat', 'ollama', 0, ?, ?, ?, ?)`);
  trace.run("a", START + 10, "m", "m", "n1", "completed", 100, 1, 2);
  trace.run("b", START + 20, "m", "m", "n2", "completed", 300, 3, 4);
  trace.run("c", START + 30, "m", "m", null, "rejected", null, null, null); // no node ran it: not local use
  trace.run("d", START - 1, "m", "m", "n1", "completed", 900, 9, 9); // the day before
  db.query("INSERT INTO trace_tags (request_id, tag, timestamp) VALUES ('a', 'x', ?)").run(START + 10);
  db.query(`INSERT INTO trace_days (day, node_id, model, requests, completed, prompt_tokens, completion_tokens, latency_sum, latency_count, last_used)
    VALUES ('2026-04-19', 'n1', 'old', 2, 2, 10, 20, 500, 2, ?)`).run(START + 40);
  return db;
}

test("a day's local use per model: traces kept and days pruned, p95 and tags from the traces kept", () => {
  expect(dayUsage(store(), "2026-04-19")).toEqual([
    { model: "m", requests: 2, prompt_tokens: 4, completion_tokens: 6, avg_latency_ms: 200, p95_latency_ms: 300, requests_by_tag: { x: 1 } },
    { model: "old", requests: 2, prompt_tokens: 10, completion_tokens: 20, avg_latency_ms: 250, p95_latency_ms: null, requests_by_tag: {} },
  ]);
  expect(dayUsage(store(), "2026-04-17")).toEqual([]);
});
