// How a model's tokenizer counts herd's prompts, learned from its answers: the ratio of the node's
// prompt_eval_count (the whole prompt, cached or not) to herd's own figure for that request (the
// 4-characters-a-token estimate, or the BPE count on Anthropic's surface). num_ctx is sized from the
// figure × that ratio, so a prompt herd over-counts no longer makes Ollama reload its runner. Per
// model, not per node:model: the tokenizer is the model's, every node running it counts alike.
// In memory only: a few answers relearn it, and until then the figure is used as it is.
import { ewma, nameOf } from "./speeds.ts";

/** Prompts herd figures smaller than this are left out: a chat template's own tokens make their ratio noise. */
export const MIN_PROMPT_TOKENS = 256;
/** The learned ratio stays within these: a sample outside is a mismatch (a wrong model, a cut prompt), not a tokenizer. */
export const MIN_RATIO = 0.5;
export const MAX_RATIO = 2;
/**
 * The expected count is raised by this share before it sizes a context: prompts of one model vary in how they
 * tokenize (code, prose, JSON), and a count under the node's lets Ollama cut the prompt silently, the worse error.
 */
export const SAFETY_MARGIN = 0.15;

export class PromptCounts {
  /** Normalized model → node's count ÷ herd's figure, a decaying average. */
  private readonly ratios = new Map<string, number>();

  /**
   * Learns from one answer: `figured`, herd's figure for its prompt; `counted`, the node's prompt_eval_count;
   * `context`, the num_ctx it ran in (null: unknown). A count that fills its context may be a prompt Ollama cut,
   * so it is not learned from.
   */
  observe(model: string, figured: number, counted: number | undefined, context: number | null): void {
    if (counted === undefined || counted <= 0 || figured < MIN_PROMPT_TOKENS) return;
    if (context !== null && counted >= context) return;
    const ratio = Math.min(MAX_RATIO, Math.max(MIN_RATIO, counted / figured));
    const name = nameOf(model);
    this.ratios.set(name, ewma(this.ratios.get(name) ?? null, ratio));
  }

  /** The prompt's size to make room for on `model`'s runner: herd's figure until the model has answered, then its expected count with the margin. */
  expected(model: string, figured: number): number {
    const ratio = this.ratios.get(nameOf(model));
    return ratio === undefined ? figured : Math.ceil(figured * ratio * (1 + SAFETY_MARGIN));
  }

  /** The ratio learned for `model`; null before its first answer. */
  ratio(model: string): number | null {
    return this.ratios.get(nameOf(model)) ?? null;
  }
}
