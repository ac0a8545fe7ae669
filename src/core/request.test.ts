import { expect, test } from "bun:test";
import { needsOf } from "./request.ts";

test("a request needs vision when a message (or a generate body) carries images, tools when it offers any", () => {
  expect(needsOf({ messages: [{ role: "user", content: "hi" }] })).toEqual({ vision: false, tools: false });
  expect(needsOf({ messages: [{ role: "user", content: "", images: ["iVBO"] }], tools: [{ type: "function" }] })).toEqual({ vision: true, tools: true });
  expect(needsOf({ images: ["iVBO"] })).toEqual({ vision: true, tools: false });
  expect(needsOf({ messages: [{ role: "user", content: "", images: [] }], tools: [] })).toEqual({ vision: false, tools: false });
});
