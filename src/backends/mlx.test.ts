import { expect, test } from "bun:test";
import type { Conversation } from "../core/conversation.ts";
import { maxTokens, openAiBody, UNKNOWN_CONTEXT } from "./mlx.ts";

const request = (over: Partial<Conversation & { stream: boolean }>) => ({ tools: [], options: {}, extra: {}, stream: true, ...over });

test("a chat goes out as OpenAI's messages: tool calls with their ids (or one made up) and JSON text arguments, tool results by id and name", () => {
  const messages = [
    { role: "user", content: "list files" },
    { role: "assistant", content: "", toolCalls: [{ name: "ls", arguments: { path: "." } }, { id: "c2", name: "pwd", arguments: {} }] },
    { role: "tool", content: "a.txt", toolCallId: "c1", toolName: "ls" },
    { role: "assistant", content: "", extra: { name: "not for mlx" } },
  ];
  expect(openAiBody("chat", request({ messages }))).toEqual({
    model: "default_model",
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "user", content: "list files" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "call_1_0", type: "function", function: { name: "ls", arguments: '{"path":"."}' } },
          { id: "c2", type: "function", function: { name: "pwd", arguments: "{}" } },
        ],
      },
      { role: "tool", content: "a.txt", tool_call_id: "c1", name: "ls" },
      { role: "assistant", content: "" },
    ],
  });
});

test("a generate is its system and prompt as messages; stream: false is a whole answer", () => {
  expect(openAiBody("generate", request({ system: "be brief", prompt: "hi", stream: false }))).toEqual({
    model: "default_model",
    stream: false,
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
    ],
  });
});

test("Ollama's option names become mlx_lm's; tools and think are passed on; the cap is the server's own (maxTokens)", () => {
  const options = { num_predict: 100, temperature: 0.2, top_p: 0.9, top_k: 40, min_p: 0.05, seed: 7, stop: ["\n"], repeat_penalty: 1.1, num_ctx: 8192 };
  expect(openAiBody("chat", request({ messages: [], options, tools: [{ name: "ls", description: "lists" }], think: false, stream: false }))).toEqual({
    model: "default_model",
    stream: false,
    messages: [],
    temperature: 0.2,
    top_p: 0.9,
    top_k: 40,
    min_p: 0.05,
    seed: 7,
    stop: ["\n"],
    repetition_penalty: 1.1,
    tools: [{ type: "function", function: { name: "ls", description: "lists" } }],
    chat_template_kwargs: { enable_thinking: false },
  });
  expect(openAiBody("chat", request({ messages: [], options: { num_predict: 0 } }))).not.toHaveProperty("tools");
});

test("max_tokens: the client's cap; none (Ollama's -1, 0 and -2 too) is the room the prompt leaves in the model's context, at least 1", () => {
  expect(maxTokens({ options: { num_predict: 100 }, promptTokens: 5000 }, 8192)).toBe(100);
  for (const options of [{}, { num_predict: -1 }, { num_predict: 0 }, { num_predict: -2 }]) expect(maxTokens({ options, promptTokens: 5000 }, 131072)).toBe(126072);
  expect(maxTokens({ options: {}, promptTokens: 5000 }, null)).toBe(UNKNOWN_CONTEXT - 5000);
  expect(maxTokens({ options: {}, promptTokens: 9000 }, 8192)).toBe(1);
});

test("images are refused, named where they are: mlx_lm.server reads text only", () => {
  expect(openAiBody("chat", request({ messages: [{ role: "user", content: "", images: ["iVBO"] }] }))).toBe(
    "messages[0].images: mlx_lm.server reads text only; send images to a vision model on Ollama",
  );
  expect(openAiBody("generate", request({ prompt: "what is it", images: ["iVBO"] }))).toBe("images: mlx_lm.server reads text only; send images to a vision model on Ollama");
});
