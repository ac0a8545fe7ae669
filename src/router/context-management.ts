// Context management before the prompt cap: when a conversation would overflow
// the serving model's context (or the router's cap), the oldest tool results
// are replaced by a short placeholder, the newest last, until it fits. The turn
// structure stays intact, so the model still sees which tools ran; what was
// cleared is said in the trace. Coding agents resend their whole history each
// turn, so this is where long sessions keep working on local context windows.
import type { Message } from "../core/conversation.ts";
import { textTokens } from "../core/tokens.ts";

/** The newest tool results are cleared last: the model is usually working on them. */
const KEEP_RECENT = 3;
const PLACEHOLDER = "[tool result cleared by herd to fit the model's context window]";

export interface Fitted {
  tokens: number;
  /** What was done, for the trace; null when nothing had to be. */
  note: string | null;
}

/**
 * Clears old tool results in `messages` (in place) until the prompt is at most `limit` tokens or nothing is left to
 * clear: the oldest first, then, when that is not enough ("force all": one huge result would otherwise leave the
 * client a 413 with nothing cleared), the newest too, oldest of them first. `tokens` is the prompt's size before.
 */
export async function fitToContext({ messages }: { messages?: Message[] }, tokens: number, limit: number): Promise<Fitted> {
  if (tokens <= limit || !messages) return { tokens, note: null };
  const results = messages.filter((m) => m.role === "tool" && m.content !== PLACEHOLDER);
  const recent = Math.min(KEEP_RECENT, results.length);
  const placeholderTokens = await textTokens(PLACEHOLDER);
  let total = tokens;
  const clear = async (batch: Message[]) => {
    let cleared = 0;
    for (const m of batch) {
      if (total <= limit) break;
      total -= (await textTokens(m.content)) - placeholderTokens;
      m.content = PLACEHOLDER;
      cleared++;
    }
    return cleared;
  };
  const old = await clear(results.slice(0, results.length - recent));
  const forced = await clear(results.slice(results.length - recent));
  if (!old && !forced) return { tokens, note: null };
  const what = [old ? `the ${old} oldest tool result(s)` : "", forced ? `${forced} of the ${recent} newest (force all: still too long without them)` : ""].filter(Boolean).join(" and ");
  return { tokens: total, note: `cleared ${what} (${tokens} → ${total} tokens) to fit ${limit}` };
}

/** The budget a prompt must fit: the model's loaded context less room for the reply, and the router's cap. */
export function promptLimit(contextLength: number | undefined, replyTokens: number, cap: number): number {
  if (!contextLength) return cap;
  return Math.min(cap, contextLength - Math.min(replyTokens, Math.floor(contextLength / 4)));
}
