// An Ollama line (from /api/chat, /api/generate or /api/embed) as Events: the
// one place that reads Ollama's answer fields. The line's bytes stay with its
// events, for the Ollama surface to relay as they are.
import type { Chunk, Event } from "../core/events.ts";

/** The fields of Ollama's answers that say something; any other field rides along in the raw bytes. */
interface OllamaAnswer {
  model?: string;
  done?: boolean;
  done_reason?: string;
  error?: string;
  message?: { content?: string; thinking?: string; tool_calls?: { id?: string; function: { name: string; arguments: unknown } }[] };
  response?: string;
  thinking?: string;
  embeddings?: number[][];
  prompt_eval_count?: number;
  eval_count?: number;
  total_duration?: number;
  load_duration?: number;
  prompt_eval_duration?: number;
  eval_duration?: number;
}

/** One line of an Ollama answer, parsed; a line that is not JSON is an error of the node's. */
export function ollamaChunk(raw: string): Chunk {
  let json: OllamaAnswer;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`the node sent a line that is not JSON: ${raw.slice(0, 80)}`);
  }
  return { raw, model: json.model, events: eventsOf(json) };
}

function eventsOf(json: OllamaAnswer): Event[] {
  if (json.error) return [{ type: "error", message: json.error }];
  const events: Event[] = [];
  // /api/chat answers in `message`, /api/generate at the top level.
  const part = json.message ?? json;
  if (part.thinking) events.push({ type: "thinking", text: part.thinking });
  const text = json.message ? json.message.content : json.response;
  if (text) events.push({ type: "text", text });
  for (const call of json.message?.tool_calls ?? []) {
    events.push({ type: "tool_call", name: call.function.name, arguments: call.function.arguments, id: call.id });
  }
  if (Array.isArray(json.embeddings)) events.push({ type: "embeddings", vectors: json.embeddings });
  if (json.done === true || json.embeddings) {
    events.push({
      type: "usage",
      promptTokens: json.prompt_eval_count,
      completionTokens: json.eval_count,
      totalNs: json.total_duration,
      loadNs: json.load_duration,
      promptNs: json.prompt_eval_duration,
      evalNs: json.eval_duration,
    });
  }
  if (json.done === true) events.push({ type: "done", reason: json.done_reason === "length" ? "length" : "stop" });
  return events;
}
