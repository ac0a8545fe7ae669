// What an answer says, whichever backend gave it and whichever wire it goes out
// on: the backends parse their wire into Events (backends/ollama-events.ts,
// backends/mlx-events.ts) and each surface's encoder writes Events as its own.

/** Why the model stopped: on its own (a tool call included; encoders name that from the calls they saw), or at its token limit. */
export type DoneReason = "stop" | "length";

export interface ToolCall {
  type: "tool_call";
  name: string;
  /** The arguments object; text that is not JSON stays text. */
  arguments: unknown;
  /** The node's id for the call, when it gave one. */
  id?: string;
}

/** A count or a duration as a node sent it: a finite number ≥ 0; anything else (a string, a negative) is none. */
export function figure(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The node's counts, and its durations in nanoseconds (Ollama's unit), each when the node says. */
export interface Usage {
  type: "usage";
  promptTokens?: number;
  completionTokens?: number;
  totalNs?: number;
  loadNs?: number;
  promptNs?: number;
  evalNs?: number;
}

export type Event =
  | { type: "text"; text: string }
  | { type: "thinking"; text: string }
  | ToolCall
  | Usage
  /** An embed answer's vectors. */
  | { type: "embeddings"; vectors: number[][] }
  | { type: "done"; reason: DoneReason }
  | { type: "error"; message: string };

/**
 * One piece of an answer as it arrived (one Ollama line, one MLX chunk): its events, in the order
 * thinking, text, tool calls, usage, and last `done` or `error` when it ends the answer.
 */
export interface Chunk {
  events: Event[];
  /** The model the node says served it. */
  model?: string;
  /** The bytes as an Ollama node sent them: the Ollama surface relays these untouched, unknown fields and all. */
  raw?: string;
}

/** The event that ends the answer, when this chunk ends it. */
export function endOf(chunk: Chunk): Extract<Event, { type: "done" | "error" }> | undefined {
  const last = chunk.events[chunk.events.length - 1];
  return last?.type === "done" || last?.type === "error" ? last : undefined;
}

/** The chunk's usage, when it has one. */
export function usageOf(chunk: Chunk): Usage | undefined {
  for (const e of chunk.events) if (e.type === "usage") return e;
  return undefined;
}

/** The error a chunk carries, when it is one. */
export function errorOf(chunk: Chunk): string | undefined {
  const end = endOf(chunk);
  return end?.type === "error" ? end.message : undefined;
}

/** A chunk's events taken together, for a wire that writes a chunk as one object: its text and reasoning, its calls, usage and end. */
export interface Folded {
  text: string;
  thinking: string;
  calls: ToolCall[];
  usage?: Usage;
  /** Set when the chunk ends the answer. */
  done?: DoneReason;
}

export function fold(chunk: Chunk): Folded {
  const folded: Folded = { text: "", thinking: "", calls: [] };
  for (const e of chunk.events) {
    if (e.type === "text") folded.text += e.text;
    else if (e.type === "thinking") folded.thinking += e.text;
    else if (e.type === "tool_call") folded.calls.push(e);
    else if (e.type === "usage") folded.usage = e;
    else if (e.type === "done") folded.done = e.reason;
  }
  return folded;
}
