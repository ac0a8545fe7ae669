// What the request path knows about one inference request, whichever surface
// decoded it: its kind, the models it may run on, what any model serving it must
// be able to do, and its prompt's size, each found once when the surface decodes
// it; and its conversation, typed (conversation.ts), which each backend renders
// into its own wire.
import type { Conversation } from "./conversation.ts";

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

/** The conversation a request continues, so routing can prefer the node still holding its prompt (core/session.ts). */
export interface Session {
  /** Where it was recognised (a header's name, or "prefix") and a hash of it: the same for every turn of one conversation. */
  key: string;
  /** Estimated tokens at this prompt's start that the node which served the previous turn still has in its KV cache. */
  cachedTokens: number;
}

/** How the client asked its model to think; `think` is decided for the model that serves (pipeline/thinking.ts). */
export type ThinkAsk =
  /** Anthropic's thinking "enabled" or "disabled": sent only to a model whose capabilities list thinking. */
  | { think: boolean }
  /** An OpenAI reasoning effort: by the model's family (fleet/thinking-models.ts:effortThink). */
  | { effort: string };

/** What a model must be able to do to serve the request: the model resolution and VRAM fallback read it. */
export interface Needs {
  vision: boolean;
  tools: boolean;
}

export interface InferenceRequest extends RequestBase, Conversation {
  kind: RequestKind;
  /** Ollama path to call: /api/chat, /api/generate, /api/embed, /api/embeddings. */
  path: string;
  /** The model to route: what the client asked for, or what its id resolved to. */
  model: string;
  /** The client's own id when the pipeline resolved it (claude-sonnet-4-5, gpt-5-codex); else `model`. */
  requested?: string;
  /** `model` is a coding agent's id (claude-*, gpt-5-codex) for the pipeline to resolve to a local model before admission (pipeline/resolve.ts). */
  resolve?: boolean;
  /** Why `model` became what it is, once resolved. */
  resolution?: string;
  /** Fit the prompt to the serving model's context, leaving this much room for the reply (pipeline/context-fit.ts). */
  fitContext?: { replyTokens: number };
  thinkAsk?: ThinkAsk;
  /** What the pipeline changed about the request (e.g. old tool results cleared), for the trace. */
  adjustments?: string[];
  fallbackModels: string[];
  /** The client asked for exactly this model (X-Fleet-No-Fallback, "fallback": false): no fallback models, no VRAM fallback. */
  strict: boolean;
  needs: Needs;
  promptTokens: number;
  /** Set by the surface for a chat (or a request naming its session): which conversation it continues. */
  session?: Session;
  /** The answer goes out as it is made (SSE, NDJSON lines), or whole. */
  stream: boolean;
  signal: AbortSignal;
}

/** The reply's token cap the client set (options.num_predict; -1 and 0 mean none), if any. */
export function replyCapOf({ options }: Pick<Conversation, "options">): number | null {
  return options.num_predict ?? null;
}

/** What a conversation needs: images in a message (or a generate request), tools offered. */
export function needsOf({ messages, images, tools }: Pick<Conversation, "messages" | "images" | "tools">): Needs {
  const vision = Boolean(messages?.some((m) => m.images?.length) || images?.length);
  return { vision, tools: tools.length > 0 };
}
