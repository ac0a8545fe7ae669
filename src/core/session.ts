// Which conversation a request continues. An agent resends its whole
// conversation each turn, and the node that served the last turn still holds
// most of that prompt in its KV cache (Ollama's per-slot cache, mlx_lm's prompt
// cache), so a later turn is cheapest there. A client that names its session
// is taken at its word; otherwise the conversation's stable start (its system
// text and first user message) identifies it.
import type { Conversation } from "./conversation.ts";
import type { Session } from "./request.ts";
import { estimatePrompt } from "./tokens.ts";

/**
 * Session headers, herd's own first: X-Herd-Session (public, for any client), then what agents send on their own
 * (Claude Code; Codex's current and older names; opencode to its own providers).
 */
export const SESSION_HEADERS = ["x-herd-session", "x-claude-code-session-id", "session_id", "conversation_id", "x-opencode-session"] as const;

/** The request's session, or none for a request without turns (an embedding, a generate without a session header). */
export function sessionOf(c: Pick<Conversation, "messages" | "system" | "tools">, headers: Headers): Session | undefined {
  const named = SESSION_HEADERS.find((h) => headers.get(h)?.trim());
  const messages = c.messages ?? [];
  // Hashed either way: a key of bounded size whatever a client sends, and no client string in what herd shows.
  const key = named ? `${named}:${hash(headers.get(named)!.trim())}` : stablePrefixKey(messages);
  return key ? { key, cachedTokens: cachedTokens(c) } : undefined;
}

// The leading system messages and the first user message: what every turn of a conversation starts with.
function stablePrefixKey(messages: NonNullable<Conversation["messages"]>): string | undefined {
  const first = messages.findIndex((m) => m.role === "user");
  if (first === -1) return undefined;
  const start = [...messages.slice(0, first).filter((m) => m.role === "system"), messages[first]!];
  return `prefix:${hash(start.map((m) => `${m.role}\0${m.content}`).join("\0"))}`;
}

/** What the node that served the last turn evaluated and wrote: everything up to the last assistant message. */
export function cachedTokens({ messages = [], system, tools }: Pick<Conversation, "messages" | "system" | "tools">): number {
  const lastReply = messages.findLastIndex((m) => m.role === "assistant");
  return lastReply === -1 ? 0 : estimatePrompt({ messages: messages.slice(0, lastReply + 1), system, tools });
}

const hash = (text: string) => Bun.hash(text).toString(16).padStart(16, "0");
