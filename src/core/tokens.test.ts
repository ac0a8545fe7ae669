import { expect, test } from "bun:test";
import { estimatePrompt, promptTokens, textTokens, thinkingTokens } from "./tokens.ts";

test("the estimate is 4 characters a token over the messages, system text and tools, images left out", () => {
  expect(estimatePrompt({ messages: [{ role: "user", content: "12345678" }], tools: [] })).toBe(3); // "user" + 8 characters
  expect(estimatePrompt({ prompt: "123456789", system: "abc", tools: [] })).toBe(3);
  expect(estimatePrompt({ messages: [{ role: "user", content: "", images: ["A".repeat(4000)] }], tools: [] })).toBe(1);
  expect(estimatePrompt({ input: ["abcd", "efgh"], tools: [] })).toBe(2);
  expect(estimatePrompt({ tools: [{ name: "read", description: "reads a file" }] })).toBe(4);
  expect(estimatePrompt({ tools: [] })).toBe(0);
});

test("an answer's thinking tokens are estimated from its text, never more than it generated", () => {
  expect(thinkingTokens(400, 500)).toBe(100);
  expect(thinkingTokens(4000, 500)).toBe(500);
  expect(thinkingTokens(0, 500)).toBe(0);
});

test("the count is the BPE tokenizer's, with each message's markers and a fixed cost per image", async () => {
  expect(await textTokens("hello world")).toBe(2);
  expect(await textTokens("<|endoftext|>")).toBeGreaterThan(1); // counted as text, not refused
  const text = await promptTokens({ messages: [{ role: "user", content: "hello world" }], tools: [] });
  expect(text).toBe(3 + 4 + 2);
  expect(await promptTokens({ messages: [{ role: "user", content: "hello world", images: ["x"] }], tools: [] })).toBe(text + 1024);
});
