import { expect, test } from "bun:test";
import type { Conversation } from "../core/conversation.ts";
import { chatConversation } from "./openai-codec.ts";

const withArguments = (args: unknown) =>
  chatConversation({ model: "m", messages: [{ role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: args } }] }] });

test("a past tool call's arguments are the object their JSON text spells", () => {
  const conversation = withArguments('{"path":"a.ts"}') as Conversation;
  expect(conversation.messages![0]!.toolCalls).toEqual([{ id: "call_1", name: "read", arguments: { path: "a.ts" } }]);
});

// Ollama takes a call's arguments as an object only: anything else is refused here, naming the field.
test("arguments that are not a JSON object are refused", () => {
  for (const args of ["{oops", "[1]", "42", [1]]) expect(withArguments(args)).toBe("messages[0].tool_calls[0].function.arguments: expected a JSON object in a string");
});
