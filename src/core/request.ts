// What the request path knows about one inference request, whichever surface
// decoded it: its kind, the models it may run on, what any model serving it must
// be able to do, and its prompt's size, each found once when the surface decodes
// it. The conversation itself is still carried as its rendering for a node's
// Ollama (`body`), which the Ollama surface passes on with the client's own
// fields, and from which the MLX backend writes OpenAI's.

export type Surface = "ollama" | "openai" | "anthropic" | "responses";

/** The kinds the router schedules on Ollama and MLX; images and transcriptions go to a node's own service. */
export type RequestKind = "chat" | "generate" | "embed";

/** Every kind of request: those above, and what a node's own service answers (core/media-request.ts; an embed there too). */
export type Kind = RequestKind | "image" | "transcription";

/** What a request of every kind carries. */
export interface RequestBase {
  surface: Surface;
  kind: Kind;
  /** The client's own signal: it aborts when the client goes. */
  signal: AbortSignal;
}

/** What a model must be able to do to serve the request: the model resolution and VRAM fallback read it. */
export interface Needs {
  vision: boolean;
  tools: boolean;
}

export interface InferenceRequest extends RequestBase {
  kind: RequestKind;
  /** Ollama path to call: /api/chat, /api/generate, /api/embed, /api/embeddings. */
  path: string;
  /** The model to route: what the client asked for, or what its id resolved to. */
  model: string;
  /** The client's own id when a surface resolved it (claude-sonnet-4-5, gpt-5-codex); else `model`. */
  requested?: string;
  /** Why `model` became what it is, when a surface resolved an agent's id (claude-*, gpt-5-codex) first. */
  resolution?: string;
  /** What the surface changed about the request (e.g. old tool results cleared), for the trace. */
  adjustments?: string[];
  fallbackModels: string[];
  /** The client asked for exactly this model (X-Fleet-No-Fallback, "fallback": false): no fallback models, no VRAM fallback. */
  strict: boolean;
  needs: Needs;
  promptTokens: number;
  /** The reply's token cap the client set (Ollama's options.num_predict; -1 and 0 mean none), when it is a number. */
  replyCap: number | null;
  /** The request rendered for Ollama, herd's own fields already removed; `model` is set per attempt. */
  body: Record<string, unknown>;
}

/** The client's reply cap in a request's Ollama rendering (options.num_predict), when it is a number. */
export function replyCapOf(body: { options?: unknown }): number | null {
  const cap = (body.options as { num_predict?: unknown } | null | undefined)?.num_predict;
  return typeof cap === "number" ? cap : null;
}

/** What a request needs, read from its Ollama rendering: images in a message (or a generate body), tools offered. */
export function needsOf(body: { messages?: unknown; images?: unknown; tools?: unknown }): Needs {
  const messages = Array.isArray(body.messages) ? (body.messages as { images?: unknown[] }[]) : [];
  const images = messages.some((m) => Array.isArray(m?.images) && m.images.length > 0) || (Array.isArray(body.images) && body.images.length > 0);
  return { vision: images, tools: Array.isArray(body.tools) && body.tools.length > 0 };
}
