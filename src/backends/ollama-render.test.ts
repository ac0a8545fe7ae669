import { expect, test } from "bun:test";
import { ollamaBody, type Renderable } from "./ollama-render.ts";

const chat = (over: Partial<Renderable> = {}): Renderable => ({ path: "/api/chat", stream: true, tools: [], options: {}, extra: {}, messages: [], ...over });

test("a chat renders its messages, tool calls, tool results and tools in Ollama's shape, for the attempt's model", () => {
  const body = ollamaBody(
    chat({
      messages: [
        { role: "user", content: "look", images: ["iVBO"] },
        { role: "assistant", content: "", thinking: "hm", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a" } }] },
        { role: "tool", content: "text", toolName: "read", toolCallId: "c1" },
      ],
      tools: [{ name: "read", description: "reads", parameters: { type: "object" } }],
      options: { num_predict: 10 },
      think: "high",
      format: "json",
      keepAlive: "5m",
      stream: false,
    }),
    "llama3.2:3b",
  );
  expect(body).toEqual({
    model: "llama3.2:3b",
    messages: [
      { role: "user", content: "look", images: ["iVBO"] },
      { role: "assistant", content: "", thinking: "hm", tool_calls: [{ id: "c1", function: { name: "read", arguments: { path: "a" } } }] },
      { role: "tool", content: "text", tool_name: "read", tool_call_id: "c1" },
    ],
    tools: [{ type: "function", function: { name: "read", description: "reads", parameters: { type: "object" } } }],
    options: { num_predict: 10 },
    think: "high",
    format: "json",
    keep_alive: "5m",
    stream: false,
  });
});

test("the Ollama client's fields herd does not model go out as they came, on the body and on a message; the attempt's options replace the client's", () => {
  const body = ollamaBody(chat({ extra: { raw: true }, messages: [{ role: "user", content: "hi", extra: { name: "x" } }], options: { num_ctx: 8192 } }), "m", { num_ctx: 4096 });
  expect(body).toEqual({ raw: true, model: "m", messages: [{ name: "x", role: "user", content: "hi" }], options: { num_ctx: 4096 }, stream: true });
});

test("generate renders prompt, system and images; embed its input (under prompt on /api/embeddings), without stream", () => {
  expect(ollamaBody(chat({ path: "/api/generate", messages: undefined, prompt: "hi", system: "be brief", images: ["iVBO"] }), "m")).toEqual({ model: "m", prompt: "hi", system: "be brief", images: ["iVBO"], stream: true });
  expect(ollamaBody(chat({ path: "/api/embed", messages: undefined, input: ["a", "b"], extra: { truncate: false } }), "m")).toEqual({ truncate: false, model: "m", input: ["a", "b"] });
  expect(ollamaBody(chat({ path: "/api/embeddings", messages: undefined, input: "a" }), "m")).toEqual({ model: "m", prompt: "a" });
});
