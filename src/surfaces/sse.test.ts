import { expect, test } from "bun:test";
import { sse } from "./sse.ts";

test("an unnamed event is one data line of JSON and a blank line", () => {
  expect(sse({ a: 1, b: "x" })).toBe('data: {"a":1,"b":"x"}\n\n');
});

test("a named event starts with its event line", () => {
  expect(sse({ type: "ping" }, "ping")).toBe('event: ping\ndata: {"type":"ping"}\n\n');
});

test("text with newlines stays on the one data line", () => {
  expect(sse({ text: "two\nlines" })).toBe('data: {"text":"two\\nlines"}\n\n');
});
