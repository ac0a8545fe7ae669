import { expect, test } from "bun:test";
import type { Conversation } from "../core/conversation.ts";
import { chatConversation, thinkFor } from "./openai-codec.ts";

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

test("a reasoning effort is Ollama's think: a level for gpt-oss, on or off for other thinking models, nothing for a model without the switch", () => {
  expect(thinkFor(undefined, "qwen3:8b")).toBeUndefined();
  expect(thinkFor("high", "qwen3:8b")).toBe(true);
  expect(thinkFor("none", "qwen3:8b")).toBe(false);
  expect(thinkFor("low", "gpt-oss:20b")).toBe("low");
  expect(thinkFor("xhigh", "GPT-OSS:120b")).toBe("high");
  expect(thinkFor("medium", "llama3.2:3b")).toBeUndefined();
  // EXAONE Deep reasons in its answer text; Ollama refuses think:true for it.
  expect(thinkFor("high", "exaone-deep:7.8b")).toBeUndefined();
});
