import { expect, test } from "bun:test";
import { ollamaConversation } from "./ollama-request.ts";

test("a chat's messages, tools and options are typed; what herd does not model is kept, on the body and on each message", () => {
  const c = ollamaConversation(
    {
      model: "m",
      messages: [
        { role: "user", content: "hi", images: ["iVBO"], future: 1 },
        { role: "assistant", tool_calls: [{ id: "c1", function: { name: "read", arguments: '{"path":"a"}' } }] },
        { role: "tool", content: "text", tool_name: "read", tool_call_id: "c1" },
      ],
      tools: [{ type: "function", function: { name: "read", description: "reads", parameters: { type: "object" } } }],
      options: { num_predict: 10, mirostat: 2 },
      think: "high",
      keep_alive: 0,
      stream: false,
      prompt: "not a chat's",
      truncate: true,
    },
    "chat",
  );
  expect(c).toEqual({
    messages: [
      { role: "user", content: "hi", images: ["iVBO"], extra: { future: 1 } },
      { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a" } }] },
      { role: "tool", content: "text", toolName: "read", toolCallId: "c1" },
    ],
    tools: [{ name: "read", description: "reads", parameters: { type: "object" } }],
    options: { num_predict: 10, mirostat: 2 },
    think: "high",
    keepAlive: 0,
    extra: { prompt: "not a chat's", truncate: true },
  });
});

test("generate reads prompt, system and images; embed its text", () => {
  expect(ollamaConversation({ prompt: "hi", system: "brief", images: ["iVBO"], raw: true }, "generate")).toEqual({ prompt: "hi", system: "brief", images: ["iVBO"], tools: [], options: {}, extra: { raw: true } });
  expect(ollamaConversation({ input: ["a"], dimensions: 8 }, "embed")).toEqual({ input: ["a"], tools: [], options: {}, extra: { dimensions: 8 } });
});

test("a field herd reads that is the wrong shape is refused by name", () => {
  const chat = (body: Record<string, unknown>) => ollamaConversation(body, "chat");
  expect(chat({ messages: {} })).toBe("messages: expected a list");
  expect(chat({ messages: [null] })).toBe("messages[0]: expected a message object");
  expect(chat({ messages: [{ role: "user", thinking: 1 }] })).toBe("messages[0].thinking: expected a string");
  expect(chat({ messages: [{ role: "assistant", tool_calls: [{ function: { name: "f", arguments: "[1]" } }] }] })).toBe("messages[0].tool_calls[0].function.arguments: expected an object");
  expect(chat({ tools: {} })).toBe("tools: expected a list");
  expect(chat({ options: [] })).toBe("options: expected an object");
  expect(chat({ options: { stop: "x" } })).toBe("options.stop: expected a list of strings");
  expect(ollamaConversation({ prompt: 1 }, "generate")).toBe("prompt: expected a string");
  expect(ollamaConversation({ images: "iVBO" }, "generate")).toBe("images: expected a list of base64 strings");
});
