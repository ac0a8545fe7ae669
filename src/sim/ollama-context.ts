// How a simulated Ollama fits a prompt into its runner's context, as ollama/ollama 0.33 does, silently: a conversation
// first loses its oldest messages (server/prompt.go chatPrompt keeps the system messages and the last one), then the
// runner keeps the first num_keep tokens and the newest, freeing about half the rest (llm/llama_server.go
// completionPromptForRequest, context shift). A request with `shift: false` gets a 400 instead.
import { OllamaError } from "./ollama-http.ts";
import { type ChatMessage, promptTokenIds } from "./replies.ts";

/** api.DefaultOptions' num_keep; the tokenizer's BOS token is kept with it. */
const DEFAULT_NUM_KEEP = 4;

const TOO_LONG =
  "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length";

/** A request's num_ctx (options.num_ctx); null when it sends none. */
export function askedContext(body: Record<string, unknown>): number | null {
  const numCtx = (body.options as { num_ctx?: unknown } | undefined)?.num_ctx;
  return typeof numCtx === "number" && Number.isInteger(numCtx) ? numCtx : null;
}

/** The prompt's tokens as the runner evaluates them in a context of `numCtx`. */
export function fitPrompt(messages: readonly ChatMessage[], numCtx: number, body: Record<string, unknown>): number[] {
  const tokens = promptTokenIds(dropOldest(messages, numCtx));
  if (tokens.length <= numCtx - 1) return tokens;
  if (body.shift === false) throw new OllamaError(400, TOO_LONG);
  const keep = Math.min(numKeep(body) + 1, numCtx - 1);
  const limit = numCtx - Math.max(Math.floor((numCtx - keep) / 2), 1);
  return [...tokens.slice(0, keep), ...tokens.slice(tokens.length - (limit - keep))];
}

// The first start of the conversation that fits, system messages always in; at worst they and the last message.
function dropOldest(messages: readonly ChatMessage[], numCtx: number): readonly ChatMessage[] {
  // Each message's own tokens; the prompt adds the one that opens the reply.
  const sizes = messages.map((m) => promptTokenIds([m]).length - 1);
  const system = sizes.reduce((sum, n, i) => sum + (messages[i]!.role === "system" ? n : 0), 0);
  let rest = sizes.reduce((sum, n, i) => sum + (messages[i]!.role === "system" ? 0 : n), 0);
  const last = messages.length - 1;
  let start = 0;
  for (; start < last && system + rest + 1 > numCtx; start++) if (messages[start]!.role !== "system") rest -= sizes[start]!;
  return start === 0 ? messages : messages.filter((m, i) => m.role === "system" || i >= start);
}

function numKeep(body: Record<string, unknown>): number {
  const n = (body.options as { num_keep?: unknown } | undefined)?.num_keep;
  return typeof n === "number" && n >= 0 ? n : DEFAULT_NUM_KEEP;
}
