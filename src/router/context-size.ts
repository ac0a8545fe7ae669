// The context a chat runs in. Ollama runs a request in the context of the model's runner: loaded with the request's
// num_ctx, or, asked none, with the node's own choice (OLLAMA_CONTEXT_LENGTH, else by its release and memory:
// fleet/ollama-releases.ts), cut to the model's trained context. Another num_ctx than the runner's reloads the model
// (its KV cache lost, seconds to a minute), and a prompt longer than the runner's context is cut, silently: a coding
// agent's ~11k-token system prompt and tool list would lose its instructions. herd knows the prompt's size, what each
// node has loaded and what it would choose, so per request it sends
// - nothing, where no runner is loaded and the node's own choice fits the prompt (no smaller context forced on it);
// - the loaded runner's context, where that fits (never another size that would reload it);
// - else one the prompt fits: the node's own choice when that is enough, else the next power of two (a growing
//   conversation reloads only when it crosses one), never past the trained context, where the prompt overflows.

/** The smallest context any Ollama release picks on its own: a request that fits it fits every node. */
export const SMALLEST_DEFAULT_CONTEXT = 4096;
/** Room kept for the reply: the request's cap, at most this (agents ask for 32k–128k and use little). */
const MAX_REPLY_ROOM = 8192;
const DEFAULT_REPLY_ROOM = 1024;

/** What a node does with a model's context. */
export interface NodeContext {
  /** The context of its runner for the model, when loaded and reported. */
  loaded: number | undefined;
  /** The context it loads the model with when asked none (its default, before the trained context's cap). */
  automatic: number;
  /** The model's trained context; null when unknown (no cap). */
  trained: number | null;
}

/** A prompt larger than the context it will run in: the request's X-Fleet-Context-Overflow. */
export interface ContextOverflow {
  estimated: number;
  contextLength: number;
}

export interface ContextSize {
  /** num_ctx to send; undefined to send none. */
  numCtx: number | undefined;
  /** Why num_ctx was raised, for the trace; null when it only keeps the loaded runner or the node's choice. */
  note: string | null;
  overflow: ContextOverflow | null;
}

/** The context a prompt of `promptTokens` with a reply of up to `replyTokens` needs. */
export function neededContext(promptTokens: number, replyTokens: number | null): number {
  return promptTokens + (replyTokens !== null && replyTokens > 0 ? Math.min(replyTokens, MAX_REPLY_ROOM) : DEFAULT_REPLY_ROOM);
}

/** The context a runner gets for `numCtx`: Ollama cuts a larger one to the trained context. */
export function capped(numCtx: number, trained: number | null): number {
  return trained !== null && numCtx > trained ? trained : numCtx;
}

/** num_ctx for a chat or generate request the client sent none for. */
export function contextSize(promptTokens: number, replyTokens: number | null, at: NodeContext): ContextSize {
  const needed = neededContext(promptTokens, replyTokens);
  const automatic = capped(at.automatic, at.trained);
  if (at.loaded !== undefined && needed <= at.loaded) return { numCtx: at.loaded, note: null, overflow: null };
  if (at.loaded === undefined && needed <= automatic) return { numCtx: undefined, note: null, overflow: null };
  const numCtx = capped(needed <= automatic ? automatic : 2 ** Math.ceil(Math.log2(needed)), at.trained);
  const overflow = promptTokens > numCtx ? { estimated: promptTokens, contextLength: numCtx } : null;
  if (numCtx === at.loaded) return { numCtx, note: null, overflow };
  // Asking for exactly what the node would choose, with nothing loaded, is asking for nothing.
  if (at.loaded === undefined && numCtx === automatic) return { numCtx: undefined, note: null, overflow };
  const outgrown = at.loaded !== undefined ? `the loaded context (${at.loaded})` : `the node's own choice (${automatic})`;
  const cap = numCtx === at.trained && needed > numCtx ? `, capped at the model's trained context` : "";
  return {
    numCtx,
    note: `num_ctx ${numCtx}: the prompt (~${promptTokens} tokens) and room for the reply (${needed - promptTokens}) outgrow ${outgrown}${cap}`,
    overflow,
  };
}
