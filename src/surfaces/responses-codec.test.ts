import { expect, test } from "bun:test";
import { readResponsesRequest } from "./responses-codec.ts";

const withArguments = (args: unknown) => readResponsesRequest({ model: "m", input: [{ type: "function_call", call_id: "c1", name: "read", arguments: args }] });

test("a function_call item's arguments become the assistant's tool call, as an object", () => {
  const t = withArguments('{"path":"a.ts"}');
  expect(typeof t === "string" ? t : t.messages).toEqual([{ role: "assistant", content: "", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a.ts" } }] }]);
});

test("arguments that are not a JSON object are refused", () => {
  for (const args of ["{oops", "[1]", '"text"']) expect(withArguments(args)).toBe("input[0].arguments: expected a JSON object in a string");
});
