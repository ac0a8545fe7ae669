// How many tokens a prompt or a text is, two ways:
// - the estimate, 4 characters a token: how the Ollama, Chat Completions and
//   Responses surfaces size every prompt for routing (the scorer's overflow
//   check, num_ctx sizing, there scaled by how the model's own answers counted
//   herd's prompts: fleet/prompt-counts.ts). A size is all routing needs, and tokenizing each
//   prompt on the hot path would cost the router milliseconds a request. Also
//   the thinking share of an answer, which Ollama's eval_count does not split.
// - the count, with a real BPE tokenizer: cl100k_base from gpt-tokenizer (pure
//   JS, its vocabulary bundled into the compiled binary, nothing fetched at run
//   time), on a thread of its own (token-worker.ts): a prompt of megabytes takes
//   it hundreds of milliseconds, which no other request may wait behind. Only the Anthropic surface pays for it, where
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

// Vision models spend from ~256 (Gemma 3) to ~1600 tokens on an image; the count cannot see its pixels.
const IMAGE_TOKENS = 1024;
// Each message costs its role and end markers on top of its text; the reply its opening marker.
const PER_MESSAGE = 4;
const PER_REPLY = 3;
/** A count that takes longer than this (a queue of megabyte prompts) is the estimate instead. */
const COUNT_MS = 10_000;

// Inside the compiled binary the worker is an entrypoint of its own (compile/build.ts), found by its bundled path.
const WORKER = import.meta.url.includes("/$bunfs/") ? "./core/token-worker.ts" : new URL("./token-worker.ts", import.meta.url).href;

/** Counts texts on the tokenizer's own thread, one batch after another; started on first use, never keeping herd alive. */
class TokenCounter {
  private worker: Worker | null = null;
  private next = 0;
  private readonly waiting = new Map<number, (counts: number[] | null) => void>();
  private warned = false;

  count(texts: string[]): Promise<number[]> {
    const id = this.next++;
    return new Promise<number[]>((resolve) => {
      const timer = setTimeout(() => this.settle(id, null, `no count within ${COUNT_MS} ms`), COUNT_MS);
      this.waiting.set(id, (counts) => {
        clearTimeout(timer);
        resolve(counts ?? texts.map((t) => estimateTokens(t.length)));
      });
      this.started().postMessage({ id, texts });
    });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER);
    worker.unref();
    worker.addEventListener("message", ({ data }: MessageEvent<{ id: number; counts?: number[]; error?: string }>) => this.settle(data.id, data.counts ?? null, data.error));
    worker.addEventListener("error", (e) => {
      // Every count under way is the estimate; the next one starts a new thread.
      for (const id of [...this.waiting.keys()]) this.settle(id, null, e.message);
      if (this.worker === worker) this.worker = null;
      worker.terminate();
    });
    return (this.worker = worker);
  }

  /** Ends the thread when no count is under way (the next count starts another): its heap goes with it. */
  release(): void {
    if (!this.worker || this.waiting.size) return;
    void this.worker.terminate();
    this.worker = null;
  }

  private settle(id: number, counts: number[] | null, why?: string): void {
    const done = this.waiting.get(id);
    if (!done) return;
    this.waiting.delete(id);
    if (!counts && !this.warned) {
      this.warned = true;
      log.warn(`the BPE tokenizer did not count (${why}); estimating tokens as characters / ${CHARS_PER_TOKEN}`);
    }
    done(counts);
  }
}

const counter = new TokenCounter();

/** The idle shrink's part for the counter: its thread ends while nothing counts. */
export function releaseIdleCounter(): void {
  counter.release();
}

/** Tokens in a piece of text. */
export async function textTokens(text: string): Promise<number> {
  return (await counter.count([text]))[0]!;
}

/** Tokens in a conversation's messages and tool definitions, as the model will be shown them. */
export async function promptTokens({ messages, tools }: Pick<Conversation, "messages" | "tools">): Promise<number> {
  const toolTokens = tools.length ? await textTokens(JSON.stringify(tools)) : 0;
  return PER_REPLY + toolTokens + (await messageTokens(messages ?? [])).reduce((a, b) => a + b, 0);
}

/** What each message adds to promptTokens: one batch for all of them. */
export async function messageTokens(messages: Message[]): Promise<number[]> {
  const texts = messages.map((m) => [m.content, m.thinking ?? "", m.toolCalls?.length ? JSON.stringify(m.toolCalls) : ""]);
  const counts = await counter.count(texts.flat());
  return messages.map((m, i) => PER_MESSAGE + counts[3 * i]! + counts[3 * i + 1]! + counts[3 * i + 2]! + (m.images?.length ?? 0) * IMAGE_TOKENS);
}
