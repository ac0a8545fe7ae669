import { expect, test } from "bun:test";
import type { Trace } from "../store/traces.ts";
import { spansOf } from "./otlp-spans.ts";

const row = (over: Partial<Trace>): Trace => ({
  request_id: "r1",
  timestamp: 1000,
  model: "m",
  original_model: "alias",
  node_id: "good",
  backend: "ollama",
  kind: "chat",
  original_format: "openai",
  stream: true,
  status: "completed",
  score: 1,
  scores_breakdown: null,
  predicted_ms: null,
  prediction_breakdown: null,
  latency_ms: 100,
  time_to_first_token_ms: 30,
  queue_wait_ms: 5,
  prompt_tokens: 7,
  completion_tokens: 9,
  retry_count: 1,
  fallback_used: false,
  excluded_nodes: ["bad"],
  client_ip: "10.0.0.9",
  error_message: null,
  tags: ["team:x"],
  resolution: null,
  adjustments: [],
  ...over,
});

test("a served request: admit, route with each attempt, relay from the first byte to the end", () => {
  const spans = spansOf(row({}));
  expect(spans.map((s) => [s.name, s.parent, s.start, s.end])).toEqual([
    ["herd.request", null, 1_000_000, 1_000_100],
    ["herd.admit", 0, 1_000_000, 1_000_000],
    ["herd.route", 0, 1_000_000, 1_000_030],
    ["herd.attempt", 2, 1_000_000, 1_000_000],
    ["herd.attempt", 2, 1_000_000, 1_000_030],
    ["herd.relay", 0, 1_000_030, 1_000_100],
  ]);
  expect(spans[0]!.attributes).toMatchObject({ "gen_ai.request.model": "alias", "gen_ai.response.model": "m", "herd.node": "good", "gen_ai.usage.output_tokens": 9 });
  expect(spans.map((s) => s.kind)).toEqual(["server", "internal", "internal", "client", "client", "internal"]);
  expect(spans[3]!.attributes).toEqual({ "herd.node": "bad", "herd.retry": 0, "herd.outcome": "failed" });
  expect(spans.every((s) => s.error === null || s.name === "herd.attempt")).toBe(true);
  // No null attribute (OTLP has none), and neither the client's address nor its tags leave herd.
  expect(JSON.stringify(spans)).not.toContain("10.0.0.9");
  expect(JSON.stringify(spans)).not.toContain("team:x");
  expect(spans.flatMap((s) => Object.values(s.attributes)).includes(null as never)).toBe(false);
});

test("a refused request ends at admission, with its error", () => {
  const spans = spansOf(row({ status: "rejected", node_id: null, time_to_first_token_ms: null, excluded_nodes: [], error_message: "over its limit" }));
  expect(spans.map((s) => [s.name, s.error])).toEqual([
    ["herd.request", "over its limit"],
    ["herd.admit", "over its limit"],
  ]);
});

test("a request no node served: route failed, no relay", () => {
  const spans = spansOf(row({ status: "failed", node_id: null, time_to_first_token_ms: null, excluded_nodes: ["a", "b"], error_message: "no node" }));
  expect(spans.map((s) => [s.name, s.error])).toEqual([
    ["herd.request", "no node"],
    ["herd.admit", null],
    ["herd.route", "no node"],
    ["herd.attempt", "failed before its first byte"],
    ["herd.attempt", "failed before its first byte"],
  ]);
});
