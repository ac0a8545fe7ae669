import { expect, test } from "bun:test";
import type { Message } from "../core/conversation.ts";
import { messageTokens } from "../core/tokens.ts";
import { SUMMARY_TOKENS, spanToSummarise, summariseOldest, summaryMessage, transcript, type Summariser } from "./compaction.ts";

/** The system prompt, a tool loop, a plain exchange, then the last question and what came after it. */
const messages: Message[] = [
  { role: "system", content: "be brief" },
  { role: "user", content: "read the files" },
  { role: "assistant", content: "", toolCalls: [{ name: "read", arguments: { path: "a.ts" } }] },
  { role: "tool", content: "export const a = 1;", toolName: "read" },
  { role: "tool", content: "export const b = 2;", toolName: "read" },
  { role: "assistant", content: "a is 1, b is 2" },
  { role: "user", content: "and c?" },
  { role: "assistant", content: "c is 3" },
  { role: "user", content: "thanks; what next?" },
  { role: "assistant", content: "", toolCalls: [{ name: "read", arguments: { path: "d.ts" } }] },
  { role: "tool", content: "export const d = 4;", toolName: "read" },
];
const tens = messages.map(() => 10);

test("the span starts after the system prompt and ends where an assistant turn begins: a tool call keeps its results, and the roles alternate after it", () => {
  expect(spanToSummarise(messages, tens, 1)).toEqual({ start: 1, end: 2 });
  expect(spanToSummarise(messages, tens, 11)).toEqual({ start: 1, end: 5 }); // not 3 or 4: the call's results go with it
  expect(spanToSummarise(messages, tens, 41)).toEqual({ start: 1, end: 7 });
});

test("the last user turn and everything after it are never in the span; nothing to summarise is null", () => {
  expect(spanToSummarise(messages, tens, 61)).toBeNull(); // the span would have to take in the last question
  expect(spanToSummarise([{ role: "system", content: "s" }, { role: "user", content: "q" }], [10, 10], 1)).toBeNull();
  expect(spanToSummarise([{ role: "user", content: "q" }, { role: "assistant", content: "a" }], [10, 10], 1)).toBeNull();
  expect(spanToSummarise([], [], 1)).toBeNull();
});

test("the span is the shortest that saves enough, by each message's cost", () => {
  const costs = [10, 500, 500, 10, 10, 10, 10, 10, 10, 10, 10];
  expect(spanToSummarise(messages, costs, 400)).toEqual({ start: 1, end: 2 });
  expect(spanToSummarise(messages, costs, 1000)).toEqual({ start: 1, end: 5 });
});

test("the transcript names each turn's role, its tool calls and results; past its cap, its middle is left out", () => {
  expect(transcript(messages.slice(1, 5), 1000)).toBe(
    'user: read the files\n\nassistant: \n(called read {"path":"a.ts"})\n\ntool result of read: export const a = 1;\n\ntool result of read: export const b = 2;',
  );
  const long = transcript([{ role: "user", content: `start ${"x".repeat(10_000)} end` }], 100);
  expect(long).toStartWith("user: start x");
  expect(long).toEndWith("x end");
  expect(long).toContain("characters left out");
  expect(long.length).toBeLessThan(400);
});

const by = (summarise: Summariser["summarise"]): Summariser => ({ model: "m", summarise, inputTokens: 10_000, signal: new AbortController().signal });
const total = async (list: Message[]) => (await messageTokens(list)).reduce((a, b) => a + b, 0);

test("the oldest turns become one summary message, the rest as it was; the note says how many and the tokens before and after", async () => {
  // Long old turns, a short question: only summarising the first exchange brings it under the limit.
  const old = "the old turn's text ".repeat(300);
  const list: Message[] = [{ role: "system", content: "s" }, { role: "user", content: old }, { role: "assistant", content: old }, { role: "user", content: "now?" }];
  const before = await total(list);
  const asked: string[] = [];
  const done = await summariseOldest(list, before, before - 400, by(async ({ text, maxTokens }) => (asked.push(text), `the gist, in ${maxTokens} tokens at most`)));
  expect(asked).toEqual([`user: ${old}`]);
  expect(list).toEqual([{ role: "system", content: "s" }, summaryMessage(1, `the gist, in ${SUMMARY_TOKENS} tokens at most`), { role: "assistant", content: old }, { role: "user", content: "now?" }]);
  const after = await total(list);
  expect(done).toEqual({ tokens: after, note: `summarised the 1 oldest messages with m (${before} → ${after} tokens) to fit ${before - 400}` });
});

test("a summariser that fails, or a summary still too long, changes nothing and says what was tried", async () => {
  const old = "the old turn's text ".repeat(300);
  const list: Message[] = [{ role: "user", content: old }, { role: "assistant", content: old }, { role: "user", content: "now?" }];
  const copy = structuredClone(list);
  const tokens = await total(list);
  const failed = await summariseOldest(list, tokens, tokens - 400, by(async () => Promise.reject(new Error("node n answered HTTP 500"))));
  expect(failed).toEqual({ failed: "summarising the 1 oldest messages with m failed (node n answered HTTP 500)" });
  const verbose = await summariseOldest(list, tokens, tokens - 400, by(async () => old.repeat(2)));
  expect(verbose).toEqual({ failed: expect.stringMatching(/^summarising the 1 oldest messages with m left about \d+ tokens$/) });
  expect(await summariseOldest(list, tokens, 10, by(async () => "never asked"))).toEqual({ failed: "no summary of the turns before the last user message could make it fit" });
  expect(list).toEqual(copy);
});
