// Which models reason before they answer, read from the name as Ollama's
// library spells the family. A reasoning model spends reply tokens on its
// thinking, so herd raises its num_predict (router/body-rules.ts), and it is a
// "reasoning" model when one stands in for another (model-traits.ts).
// Ollama's `think` switches most of them between thinking apart from the
// answer and not thinking; EXAONE Deep thinks inside its answer text
// (<thought>…</thought>) and has no switch, so it is never sent one. gpt-oss
// takes a level (low, medium, high) where the others take true or false.
// (The Anthropic surface asks Ollama instead: /api/show's capabilities, see
// fleet/model-facts.ts.)
import { withoutNamespace } from "./model-name.ts";

const REASONING = /^(qwen3(?!-coder)|gpt-oss|deepseek-r1|qwq|magistral|phi4-reasoning|cogito|exaone-deep)/;
const NO_THINK_SWITCH = /^exaone-deep/;
const THINK_LEVELS = /^gpt-oss/;

const family = (name: string) => withoutNamespace(name).toLowerCase();

/** The model reasons before it answers. */
export function reasons(model: string): boolean {
  return REASONING.test(family(model));
}

/** Ollama's `think` reaches the model's reasoning (Ollama refuses think:true for a model without it). */
export function takesThink(model: string): boolean {
  return reasons(model) && !NO_THINK_SWITCH.test(family(model));
}

/** The model's `think` is a level, not true or false. */
export function takesThinkLevel(model: string): boolean {
  return THINK_LEVELS.test(family(model));
}

/**
 * Ollama's `think` for an OpenAI reasoning effort (Chat Completions'
 * reasoning_effort, Responses' reasoning.effort): gpt-oss takes a level, other
 * thinking models on or off; a model that cannot think is not asked to (Ollama
 * refuses `think: true` there, and a level from any model but gpt-oss).
 */
export function effortThink(effort: string | undefined, model: string): boolean | string | undefined {
  if (effort === undefined) return undefined;
  if (effort === "none" || effort === "minimal") return false;
  if (!takesThink(model)) return undefined;
  if (!takesThinkLevel(model)) return true;
  return effort === "low" || effort === "high" ? effort : effort === "xhigh" ? "high" : "medium";
}
