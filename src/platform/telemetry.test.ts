import { expect, test } from "bun:test";
import { VERSION } from "../version.ts";
import { dayDue, defaultSendAtMs, localSummary, MAX_SUMMARY_TAGS } from "./telemetry.ts";

const DAY = Date.parse("2026-04-20T00:00:00Z");
const FIVE_PAST = 5 * 60_000;

test("yesterday is due once today's UTC clock is past the send time, not before", () => {
  expect(dayDue(DAY + FIVE_PAST - 1, FIVE_PAST)).toBeNull();
  expect(dayDue(DAY + FIVE_PAST, FIVE_PAST)).toBe("2026-04-19");
  expect(dayDue(DAY + 86_400_000 - 1, FIVE_PAST)).toBe("2026-04-19");
  expect(dayDue(DAY, 0)).toBe("2026-04-19");
});

test("the send time is 00:05 UTC plus a jitter of under half an hour", () => {
  for (let i = 0; i < 100; i++) {
    const at = defaultSendAtMs();
    expect(at).toBeGreaterThanOrEqual(FIVE_PAST);
    expect(at).toBeLessThan(FIVE_PAST + 30 * 60_000);
  }
});

test("the roll-up carries the whitelisted fields only; tags only when asked", () => {
  const usage = [{ model: "m", requests: 2, prompt_tokens: 3, completion_tokens: 4, avg_latency_ms: 5, p95_latency_ms: 6, requests_by_tag: { a: 1 } }];
  const entry = { model: "m", local_requests: 2, local_prompt_tokens: 3, local_completion_tokens: 4, p2p_served_requests: 0, p2p_served_tokens: 0, avg_latency_ms: 5, p95_latency_ms: 6 };
  expect(localSummary("2026-04-19", "n", usage, false)).toStrictEqual({ day: "2026-04-19", node_id: "n", agent_version: VERSION, entries: [entry] });
  expect(localSummary("2026-04-19", "n", usage, true).entries).toStrictEqual([{ ...entry, request_count_by_tag: { a: 1 } }]);
});

test("per-tag counts name the clients' own tags only, the most requested MAX_SUMMARY_TAGS, the rest summed as other", () => {
  const requests_by_tag: Record<string, number> = { "user:alice@example.com": 9, "KEY:app": 9, "key:app": 9, "project:prod": 7, other: 1 };
  for (let i = 0; i < MAX_SUMMARY_TAGS + 3; i++) requests_by_tag[`t${String(i).padStart(2, "0")}`] = 2;
  const usage = [{ model: "m", requests: 2, prompt_tokens: 3, completion_tokens: 4, avg_latency_ms: 5, p95_latency_ms: 6, requests_by_tag }];
  const sent = localSummary("2026-04-19", "n", usage, true).entries[0]!.request_count_by_tag!;
  expect(Object.keys(sent)).toHaveLength(MAX_SUMMARY_TAGS + 1);
  expect(sent["project:prod"]).toBe(7);
  expect(Object.keys(sent).filter((t) => /^(user|key):/i.test(t))).toEqual([]);
  // t00…t48 by name; t49…t52 (8 requests) and the store's own "other" (1) summed.
  expect(sent.t48).toBe(2);
  expect(sent.t49).toBeUndefined();
  expect(sent.other).toBe(9);
});
