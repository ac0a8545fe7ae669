// How many tokens an Ollama /api/chat prompt is, counted with a real BPE
// tokenizer: cl100k_base from gpt-tokenizer (pure JS, its vocabulary bundled
// into the compiled binary, nothing fetched at run time). Local models'
// vocabularies differ (Llama 3 extends cl100k; Qwen's is of the same kind), so
// this is an estimate for budgets and the prompt cap, never a bill.
import { log } from "../log.ts";

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
      log.warn(`the BPE tokenizer did not load (${e.message}); counting tokens as characters / 4`);
      return (text) => Math.ceil(text.length / 4);
    },
  );
  return loading;
}

interface ChatMessage {
  content?: unknown;
  thinking?: unknown;
  images?: unknown[];
  tool_calls?: unknown[];
}

/** Tokens in a piece of text. */
export async function textTokens(text: string): Promise<number> {
  return (await counter())(text);
}

/** Tokens in an Ollama chat body's messages and tool definitions, as the model will be shown them. */
export async function promptTokens(body: { messages?: unknown; tools?: unknown }): Promise<number> {
  const count = await counter();
  const messages = Array.isArray(body.messages) ? (body.messages as ChatMessage[]) : [];
  let total = PER_REPLY;
  for (const m of messages) {
    total += PER_MESSAGE;
    if (typeof m.content === "string") total += count(m.content);
    if (typeof m.thinking === "string") total += count(m.thinking);
    if (m.tool_calls?.length) total += count(JSON.stringify(m.tool_calls));
    total += (m.images?.length ?? 0) * IMAGE_TOKENS;
  }
  if (Array.isArray(body.tools) && body.tools.length) total += count(JSON.stringify(body.tools));
  return total;
}
