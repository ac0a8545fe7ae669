// Compaction by summary, the step after clearing tool results (context-management.ts): when a
// conversation is still too long, its oldest turns are replaced by one message holding a summary
// a local model wrote of them. Never the system prompt, never the last user turn or what follows
// it. The turns replaced end where an assistant turn begins, so a tool call stays with its
// results and the roles still alternate after the summary (a user turn): some chat templates
// refuse a conversation that does not.
import type { Message } from "../core/conversation.ts";
import { messageTokens } from "../core/tokens.ts";

/** The summary's reply cap (num_predict): what the summary may add back to the prompt. */
export const SUMMARY_TOKENS = 512;
/** The most of the old turns' text sent to be summarised, in tokens, however large the summarising model's context. */
export const SUMMARY_INPUT_TOKENS = 8192;
/** How long a summary may take before the client gets the 413 instead. */
export const SUMMARY_TIMEOUT_MS = 120_000;
/** Characters a token takes at least, in English and in code: the text cap in characters, so the summariser's prompt stays under its cap in tokens. */
const CHARS_PER_TOKEN = 3;

/** A summary asked for: of `text`, by `model`, in at most `maxTokens` tokens. */
export interface SummaryAsk {
  model: string;
  text: string;
  maxTokens: number;
}

/** Writes a summary; a port, as it runs on the fleet (pipeline/summarise.ts). */
export type Summarise = (ask: SummaryAsk, signal: AbortSignal) => Promise<string>;

/** Who summarises, and how much of the old turns it may be given (its own context bounds that). */
export interface Summariser {
  model: string;
  summarise: Summarise;
  inputTokens: number;
  signal: AbortSignal;
}

/** The prompt's size and the trace's note once summarised; or, when it could not be, what was tried, for the 413. */
export type Compacted = { tokens: number; note: string } | { failed: string };

/**
 * Replaces the oldest turns of `messages` (in place) with a summary when that brings the prompt of `tokens` to
 * `limit`; nothing is changed when it does not (the summariser failed, or its summary is still too long).
 */
export async function summariseOldest(messages: Message[], tokens: number, limit: number, by: Summariser): Promise<Compacted> {
  const costs = await messageTokens(messages);
  // What the summary may add back: its reply cap and its heading.
  const [heading] = await messageTokens([summaryMessage(messages.length, "")]);
  const span = spanToSummarise(messages, costs, tokens - limit + SUMMARY_TOKENS + heading!);
  if (!span) return { failed: "no summary of the turns before the last user message could make it fit" };
  const count = span.end - span.start;
  const tried = `summarising the ${count} oldest messages with ${by.model}`;
  let summary: string;
  try {
    summary = await by.summarise({ model: by.model, text: transcript(messages.slice(span.start, span.end), by.inputTokens), maxTokens: SUMMARY_TOKENS }, by.signal);
  } catch (e) {
    return { failed: `${tried} failed (${(e as Error).message})` };
  }
  const replacement = summaryMessage(count, summary);
  const [added] = await messageTokens([replacement]);
  const after = tokens - costs.slice(span.start, span.end).reduce((a, b) => a + b, 0) + added!;
  if (after > limit) return { failed: `${tried} left about ${after} tokens` };
  messages.splice(span.start, count, replacement);
  return { tokens: after, note: `summarised the ${count} oldest messages with ${by.model} (${tokens} → ${after} tokens) to fit ${limit}` };
}

/** Messages `start` to `end` (not included): the oldest turns a summary is to replace. */
export interface Span {
  start: number;
  end: number;
}

/**
 * The shortest span of the oldest turns whose replacement saves at least `mustSave` tokens, given each message's
 * `costs`; null when even the longest one allowed does not.
 */
export function spanToSummarise(messages: Message[], costs: number[], mustSave: number): Span | null {
  const start = messages.findIndex((m) => m.role !== "system");
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  if (start === -1 || lastUser <= start) return null;
  let saved = 0;
  for (let end = start + 1; end < lastUser; end++) {
    saved += costs[end - 1]!;
    if (messages[end]!.role === "assistant" && saved >= mustSave) return { start, end };
  }
  return null;
}

/** The span's turns as text to summarise, at most `maxTokens`: its start and its end when longer, the middle left out. */
export function transcript(span: Message[], maxTokens: number): string {
  const text = span.map(line).join("\n\n");
  const maxChars = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  return `${text.slice(0, half)}\n\n[… ${text.length - 2 * half} characters left out …]\n\n${text.slice(-half)}`;
}

function line(m: Message): string {
  const calls = (m.toolCalls ?? []).map((c) => `\n(called ${c.name} ${JSON.stringify(c.arguments)})`).join("");
  const who = m.role === "tool" ? `tool result${m.toolName ? ` of ${m.toolName}` : ""}` : m.role;
  return `${who}: ${m.content}${calls}`;
}

/** The one message the span becomes. */
export function summaryMessage(count: number, summary: string): Message {
  return { role: "user", content: `[herd summarised the ${count} earliest messages of this conversation to fit the model's context]\n${summary}` };
}
