import { expect, test } from "bun:test";
import { needsOf, replyCapOf } from "./request.ts";

test("a request needs vision when a message (or a generate request) carries images, tools when it offers any", () => {
  expect(needsOf({ messages: [{ role: "user", content: "hi" }], tools: [] })).toEqual({ vision: false, tools: false });
  expect(needsOf({ messages: [{ role: "user", content: "", images: ["iVBO"] }], tools: [{ name: "f" }] })).toEqual({ vision: true, tools: true });
  expect(needsOf({ images: ["iVBO"], tools: [] })).toEqual({ vision: true, tools: false });
  expect(needsOf({ messages: [{ role: "user", content: "", images: [] }], tools: [] })).toEqual({ vision: false, tools: false });
});

test("the reply cap is options.num_predict (-1 and 0 included: Ollama's no limit), else none", () => {
  expect(replyCapOf({ options: { num_predict: 200, temperature: 0 } })).toBe(200);
  expect(replyCapOf({ options: { num_predict: -1 } })).toBe(-1);
  expect(replyCapOf({ options: {} })).toBeNull();
});
