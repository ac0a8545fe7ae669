// Three adjustments to a request's options once the serving node is known:
// - context protection: a client's num_ctx no larger than what the node already
//   has loaded would only make Ollama reload the model (a long stall), so it is
//   stripped ("strip"), logged ("warn") or left alone ("passthrough");
// - context size: with no num_ctx from the client, herd sets one the prompt
//   fits (context-size.ts);
// - thinking budgets: a thinking model spends tokens on its reasoning before it
//   answers, so a client's num_predict is raised so the answer still fits.
import type { Config } from "../config/schema.ts";
import type { Chunk } from "../core/events.ts";
import type { Conversation, Options } from "../core/conversation.ts";
import { type InferenceRequest, replyCapOf } from "../core/request.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import { reasons } from "../fleet/thinking-models.ts";
import { contextSize } from "./context-size.ts";
import { thinkingTokens } from "../core/tokens.ts";

/** Raise a thinking model's num_predict by this factor, to at least THINKING_MIN_PREDICT and at most THINKING_MAX_PREDICT. */
const THINKING_OVERHEAD = 4;
const THINKING_MIN_PREDICT = 1024;
const THINKING_MAX_PREDICT = 32768;

export interface Adjusted {
  /** The options to send this node (the client's are left as they came). */
  options: Options;
  /** Set when num_predict was raised: what the client asked for, and what was sent. */
  thinkingBudget: { requested: number; sent: number } | null;
  /** What was changed, for the trace. */
  notes: string[];
  /** num_ctx was raised so the prompt fits: it no longer overflows the node's context. */
  contextRaised: boolean;
  /** For the log ("warn"): a client's num_ctx kept that makes Ollama reload the model. Not logged here: the ranking asks this of every candidate. */
  warning: string | null;
}

/** What herd knows about the request's fit on the chosen node; promptTokens null for requests that run no chat (embeddings). */
export interface Fit {
  loadedContext: number | undefined;
  /** The prompt as `model`'s tokenizer will likely count it (fleet/prompt-counts.ts). */
  promptTokens: number | null;
}

/** The request's fit for `model` on a node whose runner for it has `loadedContext` (undefined: none loaded, or not reported). */
export function fitOn(req: Pick<InferenceRequest, "kind" | "promptTokens">, model: string, loadedContext: number | undefined, counts: Pick<PromptCounts, "expected">): Fit {
  return { loadedContext, promptTokens: req.kind === "embed" ? null : counts.expected(model, req.promptTokens) };
}

/**
 * The options herd sends `model` on a node whose runner has `loadedContext`: what the dispatcher sends, and what the
 * ranking prices a reload by, from one rule.
 */
function optionsOn(
  req: Pick<InferenceRequest, "kind" | "promptTokens"> & Pick<Conversation, "options" | "think">,
  model: string,
  loadedContext: number | undefined,
  counts: Pick<PromptCounts, "expected">,
  mode: Config["features"]["contextProtection"],
): Adjusted {
  return adjustOptions(req, model, fitOn(req, model, loadedContext, counts), mode);
}

/**
 * optionsOn for one request, remembering its last answer: the ranking asks it of every candidate (most share a model
 * and a loaded context) and the call again of the one it picked.
 */
export function optionsFor(
  req: Parameters<typeof optionsOn>[0],
  counts: Pick<PromptCounts, "expected">,
  mode: Config["features"]["contextProtection"],
): (model: string, loadedContext: number | undefined) => Adjusted {
  let last: { model: string; loadedContext: number | undefined; adjusted: Adjusted } | null = null;
  return (model, loadedContext) => {
    if (last?.model !== model || last.loadedContext !== loadedContext) last = { model, loadedContext, adjusted: optionsOn(req, model, loadedContext, counts, mode) };
    return last.adjusted;
  };
}

/** Sending these options makes Ollama reload the loaded runner: another num_ctx restarts it, and its KV cache goes with it. */
export function reloadsRunner({ num_ctx }: Options, loadedContext: number | undefined): boolean {
  return loadedContext !== undefined && typeof num_ctx === "number" && num_ctx !== loadedContext;
}

export function adjustOptions(req: Pick<Conversation, "options" | "think">, model: string, { loadedContext, promptTokens }: Fit, mode: Config["features"]["contextProtection"]): Adjusted {
  const options = { ...req.options };
  const requested = replyCapOf(req);
  const notes: string[] = [];
  let warning: string | null = null;
  const numCtx = options.num_ctx;
  if (typeof numCtx === "number" && loadedContext && numCtx <= loadedContext && mode !== "passthrough") {
    if (mode === "strip") {
      delete options.num_ctx;
      notes.push(`num_ctx ${numCtx} stripped: the loaded context (${loadedContext}) already fits it`);
    } else warning = `${model}: num_ctx ${numCtx} fits the loaded context (${loadedContext}) but makes Ollama reload the model`;
  }
  let thinkingBudget: Adjusted["thinkingBudget"] = null;
  // A cap that is already generous (agents ask for 32k–128k) is left alone: ×4 would only let a runaway run on.
  const sent = requested !== null ? Math.max(requested, Math.min(requested * THINKING_OVERHEAD, THINKING_MAX_PREDICT), THINKING_MIN_PREDICT) : 0;
  if (requested !== null && requested > 0 && sent > requested && req.think !== false && reasons(model)) {
    options.num_predict = sent;
    thinkingBudget = { requested, sent };
    notes.push(`num_predict raised ${requested} → ${sent} for a thinking model`);
  }
  // After the thinking budget: the reply's room includes the reasoning.
  const size = promptTokens !== null && options.num_ctx === undefined ? contextSize(promptTokens, thinkingBudget?.sent ?? requested, loadedContext) : null;
  if (size) {
    options.num_ctx = size.numCtx;
    if (size.note) notes.push(size.note);
  }
  return { options, thinkingBudget, notes, contextRaised: Boolean(size?.note), warning };
}

/** The seed's reasoning-budget diagnostics for a finished non-streaming answer. */
export function budgetHeaders(budget: NonNullable<Adjusted["thinkingBudget"]>, answer: Chunk): Record<string, string> {
  let thinkingChars = 0;
  let total = 0;
  let reason = "stop";
  for (const e of answer.events) {
    if (e.type === "thinking") thinkingChars += e.text.length;
    else if (e.type === "usage") total = e.completionTokens ?? 0;
    else if (e.type === "done") reason = e.reason;
  }
  const thinking = thinkingTokens(thinkingChars, total);
  return {
    "X-Thinking-Tokens": String(thinking),
    "X-Output-Tokens": String(total - thinking),
    "X-Budget-Used": `${total}/${budget.sent}`,
    "X-Done-Reason": reason,
  };
}
