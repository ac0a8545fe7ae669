// An Ollama line (from /api/chat, /api/generate or /api/embed) as Events: the
// one place that reads Ollama's answer fields. The line's bytes stay with its
// events, for the Ollama surface to relay as they are.
import { type Chunk, type Event, figure } from "../core/events.ts";

/**
 * The fields of Ollama's answers that say something; any other field rides along in the raw bytes. Each is what
 * Ollama sends if the node is honest: a field of another type is read as absent (a line is the node's word).
 */
interface OllamaAnswer {
  model?: unknown;
  done?: unknown;
  done_reason?: unknown;
  /** A string from Ollama; anything from a node that is not (see errorText). */
  error?: unknown;
  message?: unknown;
  response?: unknown;
  thinking?: unknown;
  embeddings?: unknown;
  prompt_eval_count?: unknown;
  eval_count?: unknown;
  total_duration?: unknown;
  load_duration?: unknown;
  prompt_eval_duration?: unknown;
  eval_duration?: unknown;
}


/** One line of an Ollama answer, parsed; a line that is not a JSON object is an error of the node's. */
export function ollamaChunk(raw: string): Chunk {
  let json: OllamaAnswer;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`the node sent a line that is not JSON: ${raw.slice(0, 80)}`);
  }
  if (!isObject(json)) throw new Error(`the node sent a line that is not a JSON object: ${raw.slice(0, 80)}`);
  return { raw, model: text(json.model), events: eventsOf(json) };
}

function eventsOf(json: OllamaAnswer): Event[] {
  if (json.error) return [{ type: "error", message: errorText(json.error) }];
  const events: Event[] = [];
  // /api/chat answers in `message`, /api/generate at the top level.
  const message = isObject(json.message) ? json.message : null;
  const thinking = text((message ?? json).thinking);
  if (thinking) events.push({ type: "thinking", text: thinking });
  const content = text(message ? message.content : json.response);
  if (content) events.push({ type: "text", text: content });
  const calls: unknown[] = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    const fn = isObject(call) && isObject(call.function) ? call.function : null;
    const name = text(fn?.name);
    if (fn && name) events.push({ type: "tool_call", name, arguments: fn.arguments, id: text((call as { id?: unknown }).id) });
  }
  const vectors = Array.isArray(json.embeddings) && json.embeddings.every(Array.isArray) ? (json.embeddings as number[][]) : null;
  if (vectors) events.push({ type: "embeddings", vectors });
  if (json.done === true || vectors) {
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** An answer's error as words: Ollama's is a string; an object's `message`, else the value itself as JSON, cut short. */
function errorText(error: unknown): string {
  if (typeof error === "string") return error;
  const message = typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined;
  return typeof message === "string" ? message : `the node answered an error that is not text: ${JSON.stringify(error).slice(0, 200)}`;
}
