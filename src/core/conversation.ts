// The conversation of an inference request, typed, whichever API it came in: the
// surfaces decode their wire into it, the stages read it, and each backend renders
// it once into its own (backends/ollama-render.ts, backends/mlx.ts).

type Json = Record<string, unknown>;

/** A call the model made, its arguments parsed. */
export interface ToolCall {
  id?: string;
  name: string;
  arguments: Json;
}

export interface Message {
  role: string;
  content: string;
  /** Base64 image data, as Ollama takes it. */
  images?: string[];
  /** The model's reasoning before this turn, passed back. */
  thinking?: string;
  toolCalls?: ToolCall[];
  /** A tool result's tool, by name, and the call it answers. */
  toolName?: string;
  toolCallId?: string;
  /** What an Ollama client sent on the message that herd does not model, passed on as it came. */
  extra?: Json;
}

/** A tool the model may call: its JSON-schema parameters. */
export interface Tool {
  name: string;
  description?: string;
  parameters?: Json;
}

/** Ollama's sampling and runner options: typed where herd reads or translates them, the rest kept by name. */
export interface Options {
  num_ctx?: number;
  /** The reply's token cap; -1 and 0 mean none. */
  num_predict?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  seed?: number;
  stop?: string[];
  repeat_penalty?: number;
  [name: string]: unknown;
}

/** The options herd checks the type of (stop is a list of strings). */
export const NUMERIC_OPTIONS = ["num_ctx", "num_predict", "temperature", "top_p", "top_k", "min_p", "seed", "repeat_penalty"] as const;

/** Thinking on or off, or a level ("low", "medium", "high") for models that take one. */
export type Think = boolean | string;

export interface Conversation {
  /** A chat's turns. */
  messages?: Message[];
  /** A generate request's prompt, system text and images. */
  prompt?: string;
  system?: string;
  images?: string[];
  /** An embedding request's text(s). */
  input?: string | string[];
  tools: Tool[];
  options: Options;
  think?: Think;
  /** "json", or a JSON schema the answer must follow. */
  format?: unknown;
  keepAlive?: unknown;
  /** The Ollama client's fields herd does not model (raw, template, suffix, truncate, dimensions, …), passed on as they came. */
  extra: Json;
}
