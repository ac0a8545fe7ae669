// The context a chat runs in. Ollama runs a model with the context its runner
// was loaded with (OLLAMA_CONTEXT_LENGTH, 4096 unless the operator changed it)
// and silently drops the start of a prompt that does not fit: a coding agent's
// ~11k-token system prompt and tool list would lose its instructions. herd
// knows the prompt's size and what each node has loaded, so it sizes num_ctx
// per request: never smaller than the loaded runner (a different num_ctx makes
// Ollama reload the model), and in powers of two, so a growing conversation
// reloads the model only when it crosses one.

/** Ollama's context when neither the request nor a loaded runner says otherwise. */
export const OLLAMA_DEFAULT_CONTEXT = 4096;
/** Room kept for the reply: the request's cap, at most this (agents ask for 32k–128k and use little). */
const MAX_REPLY_ROOM = 8192;
const DEFAULT_REPLY_ROOM = 1024;

export interface ContextSize {
  numCtx: number;
  /** Why num_ctx was raised, for the trace; null when it only keeps the loaded runner. */
  note: string | null;
}

/** num_ctx for a chat or generate request the client sent none for; null to leave the request as it is. */
export function contextSize(promptTokens: number, replyTokens: number | null, loadedContext: number | undefined): ContextSize | null {
  const room = replyTokens !== null && replyTokens > 0 ? Math.min(replyTokens, MAX_REPLY_ROOM) : DEFAULT_REPLY_ROOM;
  const needed = promptTokens + room;
  const current = loadedContext ?? OLLAMA_DEFAULT_CONTEXT;
  if (needed <= current) return loadedContext ? { numCtx: loadedContext, note: null } : null;
  const numCtx = 2 ** Math.ceil(Math.log2(needed));
  const what = loadedContext ? "loaded" : "default";
  return { numCtx, note: `num_ctx ${numCtx}: the prompt (~${promptTokens} tokens) and room for the reply (${room}) outgrow the ${what} context (${current})` };
}
