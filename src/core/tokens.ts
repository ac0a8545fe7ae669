// How many tokens a prompt or a text is, two ways:
// - the estimate, 4 characters a token: how the Ollama, Chat Completions and
//   Responses surfaces size every prompt for routing (the scorer's overflow
//   check, num_ctx sizing, there scaled by how the model's own answers counted
//   herd's prompts: fleet/prompt-counts.ts). A size is all routing needs, and tokenizing each
//   prompt on the hot path would cost the router milliseconds a request. Also
//   the thinking share of an answer, which Ollama's eval_count does not split.
// - the count, with a real BPE tokenizer: cl100k_base from gpt-tokenizer (pure
//   JS, its vocabulary bundled into the compiled binary, nothing fetched at run
//   time), loaded on first use. Only the Anthropic surface pays for it, where
//   the number is told to the client or refuses the request: input_tokens,
//   count_tokens, clearing old tool results, and the 413 over the limit.
// Local models' vocabularies differ (Llama 3 extends cl100k; Qwen's is of the
// same kind), so both are estimates for budgets and caps, never a bill.
import type { Conversation, Message } from "./conversation.ts";
import { log } from "../log.ts";

const CHARS_PER_TOKEN = 4;

/** The estimate for this many characters. */
function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The estimated size of the prompt a conversation makes: its messages (or prompt, or input), and the system text and tools the template renders in. */
export function estimatePrompt(c: Pick<Conversation, "messages" | "prompt" | "input" | "system" | "tools">): number {
  return estimateTokens(textLength([c.messages ?? c.prompt ?? c.input, c.system, c.tools]));
}

// Images are left out: their base64 is no measure of their tokens.
function textLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value && typeof value === "object") return Object.entries(value).reduce((n, [k, v]) => (k === "images" ? n : n + textLength(v)), 0);
  return 0;
}

/** The estimated part of an answer's `evalCount` tokens that its thinking text took. */
export function thinkingTokens(thinkingChars: number, evalCount: number): number {
  return Math.min(evalCount, estimateTokens(thinkingChars));
}

type Count = (text: string) => number;

// Vision models spend from ~256 (Gemma 3) to ~1600 tokens on an image; the count cannot see its pixels.
const IMAGE_TOKENS = 1024;
// Each message costs its role and end markers on top of its text; the reply its opening marker.
const PER_MESSAGE = 4;
const PER_REPLY = 3;

let loading: Promise<Count> | undefined;

// Loaded on first use: parsing the vocabulary takes about half a second, which router startup should not pay.
function counter(): Promise<Count> {
  loading ??= import("gpt-tokenizer/encoding/cl100k_base").then(
    // Text that spells a special token (<|endoftext|>) is counted as text, not refused.
    (bpe): Count => (text) => bpe.countTokens(text, { disallowedSpecial: new Set() }),
    (e: Error): Count => {
      log.warn(`the BPE tokenizer did not load (${e.message}); estimating tokens as characters / ${CHARS_PER_TOKEN}`);
      return (text) => estimateTokens(text.length);
    },
  );
  return loading;
}

/** Tokens in a piece of text. */
export async function textTokens(text: string): Promise<number> {
  return (await counter())(text);
}

/** Tokens in a conversation's messages and tool definitions, as the model will be shown them. */
export async function promptTokens({ messages, tools }: Pick<Conversation, "messages" | "tools">): Promise<number> {
  const count = await counter();
  let total = PER_REPLY;
  for (const m of messages ?? []) total += messageCost(count, m);
  if (tools.length) total += count(JSON.stringify(tools));
  return total;
}

/** What each message adds to promptTokens. */
export async function messageTokens(messages: Message[]): Promise<number[]> {
  const count = await counter();
  return messages.map((m) => messageCost(count, m));
}

function messageCost(count: Count, m: Message): number {
  let total = PER_MESSAGE + count(m.content);
  if (m.thinking) total += count(m.thinking);
  if (m.toolCalls?.length) total += count(JSON.stringify(m.toolCalls));
  return total + (m.images?.length ?? 0) * IMAGE_TOKENS;
}
