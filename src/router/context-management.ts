// Context management before the prompt cap: when a conversation would overflow
// the serving model's context (or the router's cap), the oldest tool results
// are replaced by a short placeholder, newest kept, until it fits. The turn
// structure stays intact, so the model still sees which tools ran; what was
// cleared is said in the trace. Coding agents resend their whole history each
// turn, so this is where long sessions keep working on local context windows.
import type { Message } from "../core/conversation.ts";
import { textTokens } from "../core/tokens.ts";

/** The newest tool results are never cleared: the model is usually working on them. */
const KEEP_RECENT = 3;
const PLACEHOLDER = "[tool result cleared by herd to fit the model's context window]";

export interface Fitted {
  tokens: number;
  /** What was done, for the trace; null when nothing had to be. */
  note: string | null;
}

/**
 * Clears old tool results in `messages` (in place) until the prompt is at
 * most `limit` tokens or nothing is left to clear. `tokens` is the prompt's size before.
 */
export async function fitToContext({ messages }: { messages?: Message[] }, tokens: number, limit: number): Promise<Fitted> {
  if (tokens <= limit || !messages) return { tokens, note: null };
  const results = messages.filter((m) => m.role === "tool" && m.content !== PLACEHOLDER);
  const clearable = results.slice(0, Math.max(0, results.length - KEEP_RECENT));
  const placeholderTokens = await textTokens(PLACEHOLDER);
  let total = tokens;
  let cleared = 0;
  for (const m of clearable) {
    if (total <= limit) break;
    total -= (await textTokens(m.content)) - placeholderTokens;
    m.content = PLACEHOLDER;
    cleared++;
  }
  if (!cleared) return { tokens, note: null };
  return { tokens: total, note: `cleared the ${cleared} oldest tool result(s) (${tokens} → ${total} tokens) to fit ${limit}` };
}

/** The budget a prompt must fit: the model's loaded context less room for the reply, and the router's cap. */
export function promptLimit(contextLength: number | undefined, replyTokens: number, cap: number): number {
  if (!contextLength) return cap;
  return Math.min(cap, contextLength - Math.min(replyTokens, Math.floor(contextLength / 4)));
}
