import { expect, test } from "bun:test";
import { ollamaChunk } from "./ollama-events.ts";

test("a chat line's thinking, text and tool calls are events in that order, its bytes kept as sent", () => {
  const raw = '{"model":"qwen3:8b","message":{"role":"assistant","content":"hi","thinking":"hm","tool_calls":[{"id":"c1","function":{"name":"read","arguments":{"path":"a"}}}]},"done":false,"extra":1}';
  expect(ollamaChunk(raw)).toEqual({
    raw,
    model: "qwen3:8b",
    events: [
      { type: "thinking", text: "hm" },
      { type: "text", text: "hi" },
      { type: "tool_call", name: "read", arguments: { path: "a" }, id: "c1" },
    ],
  });
});

test("empty text is no event; the done line gives usage (each count and duration the node said) and the end", () => {
  const chunk = ollamaChunk('{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","total_duration":9,"load_duration":1,"prompt_eval_count":3,"eval_count":4}');
  expect(chunk.events).toEqual([
    { type: "usage", promptTokens: 3, completionTokens: 4, totalNs: 9, loadNs: 1, promptNs: undefined, evalNs: undefined },
    { type: "done", reason: "length" },
  ]);
  // Any other reason (stop, load, unload) is the model's own end.
  expect(ollamaChunk('{"done":true,"done_reason":"unload"}').events.at(-1)).toEqual({ type: "done", reason: "stop" });
});

test("a generate line answers at the top level", () => {
  expect(ollamaChunk('{"model":"m","response":"4","thinking":"2+2","done":false}').events).toEqual([
    { type: "thinking", text: "2+2" },
    { type: "text", text: "4" },
  ]);
});

test("an embed answer is its vectors and its prompt count; an error line is the error alone", () => {
  expect(ollamaChunk('{"model":"e","embeddings":[[0.5]],"prompt_eval_count":2}').events).toEqual([
    { type: "embeddings", vectors: [[0.5]] },
    { type: "usage", promptTokens: 2, completionTokens: undefined, totalNs: undefined, loadNs: undefined, promptNs: undefined, evalNs: undefined },
  ]);
  expect(ollamaChunk('{"error":"model not found","done":true}').events).toEqual([{ type: "error", message: "model not found" }]);
});

test("a line that is not JSON is the node's error, named", () => {
  expect(() => ollamaChunk("{oops")).toThrow("the node sent a line that is not JSON: {oops");
});

test("a line's fields of the wrong type are read as absent, never thrown on; an error that is not a string is said in words", () => {
  const events = (line: unknown) => ollamaChunk(JSON.stringify(line)).events;
  expect(events({ message: "text", done: false })).toEqual([]);
  expect(events({ message: { content: 5, thinking: ["x"], tool_calls: [null, { function: null }, { function: { name: 7 } }, { function: { name: "f", arguments: { a: 1 } } }] } })).toEqual([{ type: "tool_call", name: "f", arguments: { a: 1 }, id: undefined }]);
  expect(events({ embeddings: ["x"], done: true, eval_count: "12", eval_duration: -1, prompt_eval_count: 3 })).toEqual([
    { type: "usage", promptTokens: 3, completionTokens: undefined, totalNs: undefined, loadNs: undefined, promptNs: undefined, evalNs: undefined },
    { type: "done", reason: "stop" },
  ]);
  expect(events({ error: { message: "out of memory" } })).toEqual([{ type: "error", message: "out of memory" }]);
  expect(events({ error: 5 })).toEqual([{ type: "error", message: "the node answered an error that is not text: 5" }]);
  expect(() => ollamaChunk("null")).toThrow("not a JSON object");
  expect(() => ollamaChunk("[1]")).toThrow("not a JSON object");
});
