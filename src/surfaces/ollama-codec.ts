// Ollama's own wire out: an Ollama node's lines go as the node sent them (so
// every field survives, known to herd or not); an answer from another backend
// (an MLX server) or one herd remade (a repaired tool call) is written from its
// Events as Ollama would have written it.
import { type Chunk, fold } from "../core/events.ts";
import type { Encoder } from "../core/encoder.ts";
import { jsonError } from "../core/wire-errors.ts";

type Json = Record<string, unknown>;

/** Each chunk as one NDJSON line; errors as {"error": "..."}. */
export function ndjson(kind: "chat" | "generate" | "embed", stream: boolean): Encoder {
  return {
    contentType: stream ? "application/x-ndjson" : "application/json; charset=utf-8",
    encode: (chunk) => `${chunk.raw ?? JSON.stringify(ollamaLine(chunk, kind))}\n`,
    end: () => "",
    fail: (message) => `${JSON.stringify({ error: message })}\n`,
    error: (status, message, headers) => jsonError(status, message, headers),
  };
}

/** The chunk as Ollama's /api/chat or /api/generate line, its fields in Ollama's order. */
export function ollamaLine(chunk: Chunk, kind: "chat" | "generate" | "embed"): Json {
  const { text: content, thinking, calls, usage, done: reason } = fold(chunk);
  const line: Json = { model: chunk.model, created_at: new Date().toISOString() };
  if (kind === "chat") {
    const toolCalls = calls.map((c) => ({ ...(c.id ? { id: c.id } : {}), function: { name: c.name, arguments: c.arguments } }));
    line.message = { role: "assistant", content, ...(thinking ? { thinking } : {}), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
  } else {
    line.response = content;
    if (thinking) line.thinking = thinking;
  }
  line.done = reason !== undefined;
  if (reason === undefined) return line;
  line.done_reason = reason;
  line.total_duration = usage?.totalNs;
  line.load_duration = usage?.loadNs;
  line.prompt_eval_count = usage?.promptTokens;
  line.prompt_eval_duration = usage?.promptNs;
  line.eval_count = usage?.completionTokens;
  line.eval_duration = usage?.evalNs;
  return line;
}
