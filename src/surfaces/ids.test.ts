import { expect, test } from "bun:test";
import { randomId } from "./ids.ts";

test("an id is its prefix and 24 hex digits, a new one each time", () => {
  expect(randomId("msg_")).toMatch(/^msg_[0-9a-f]{24}$/);
  expect(randomId("chatcmpl-")).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
  expect(randomId("x")).not.toBe(randomId("x"));
});
