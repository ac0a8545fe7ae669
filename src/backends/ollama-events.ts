// An Ollama line (from /api/chat, /api/generate or /api/embed) as Events: the
// one place that reads Ollama's answer fields. The line's bytes stay with its
// events, for the Ollama surface to relay as they are.
import { type Chunk, type Event, figure } from "../core/events.ts";

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
  // What the node says of its work: numbers, if it is honest (see figure()).
  prompt_eval_count?: unknown;
  eval_count?: unknown;
  total_duration?: unknown;
  load_duration?: unknown;
  prompt_eval_duration?: unknown;
  eval_duration?: unknown;
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
      promptTokens: figure(json.prompt_eval_count),
      completionTokens: figure(json.eval_count),
      totalNs: figure(json.total_duration),
      loadNs: figure(json.load_duration),
      promptNs: figure(json.prompt_eval_duration),
      evalNs: figure(json.eval_duration),
    });
  }
  if (json.done === true) events.push({ type: "done", reason: json.done_reason === "length" ? "length" : "stop" });
  return events;
}
