// Three adjustments to a request's options once the serving node is known:
// - context protection: a client's num_ctx no larger than what the node already
//   has loaded would only make Ollama reload the model (a long stall), so it is
//   stripped ("strip"), logged ("warn") or left alone ("passthrough"); one past the
//   model's trained context is cut to it (Ollama would run it so anyway);
// - context size: with no num_ctx from the client, herd sends what the prompt
//   fits, or nothing where the node's own choice fits it (context-size.ts);
// - thinking budgets: a thinking model spends tokens on its reasoning before it
//   answers, so a client's num_predict is raised so the answer still fits; its
//   non-streaming answers say how the budget went (budgetHeaders).
import type { Config } from "../config/schema.ts";
import type { Chunk } from "../core/events.ts";
import type { Conversation, Options } from "../core/conversation.ts";
import { type InferenceRequest, replyCapOf } from "../core/request.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import type { Eligible } from "../fleet/scorer.ts";
import { reasons } from "../fleet/thinking-models.ts";
import { type ContextOverflow, contextSize, type NodeContext } from "./context-size.ts";
import { thinkingTokens } from "../core/tokens.ts";

/** Raise a thinking model's num_predict by this factor, to at least THINKING_MIN_PREDICT and at most THINKING_MAX_PREDICT. */
const THINKING_OVERHEAD = 4;
const THINKING_MIN_PREDICT = 1024;
const THINKING_MAX_PREDICT = 32768;

export interface Adjusted {
  /** The options to send this node (the client's are left as they came). */
  options: Options;
  /**
   * For a thinking model, the reasoning budget: the client's num_predict (null: none), and the one sent (raised, or as
   * asked; Ollama's -1, no cap, when none). Null for other models.
   */
  thinkingBudget: { requested: number | null; sent: number } | null;
  /** What was changed, for the trace. */
  notes: string[];
  /** The prompt is larger than the context it will run in on this node (Ollama cuts it): the X-Fleet-Context-Overflow. */
  overflow: ContextOverflow | null;
  /** For the log ("warn"): a client's num_ctx kept that makes Ollama reload the model. Not logged here: the ranking asks this of every candidate. */
  warning: string | null;
}

/** What a candidate node does with the context of its model, whose trained context is `trained`. */
export function contextAt(e: Pick<Eligible, "loadedContext" | "node">, trained: number | null): NodeContext {
  return { loaded: e.loadedContext, automatic: e.node.defaultContext, trained };
}

/** What herd knows about the request's fit on the chosen node; promptTokens null for requests that run no chat (embeddings). */
export interface Fit {
  at: NodeContext;
  /** The prompt as `model`'s tokenizer will likely count it (fleet/prompt-counts.ts). */
  promptTokens: number | null;
}

/** The request's fit for `model` on a node that does `at` with its context. */
export function fitOn(req: Pick<InferenceRequest, "kind" | "promptTokens">, model: string, at: NodeContext, counts: Pick<PromptCounts, "expected">): Fit {
  return { at, promptTokens: req.kind === "embed" ? null : counts.expected(model, req.promptTokens) };
}

type OptionsRequest = Pick<InferenceRequest, "kind" | "promptTokens"> & Pick<Conversation, "options" | "think">;

/**
 * The options herd sends `model` on a node, for one request: what the dispatcher sends, and what the ranking prices a
 * reload by, from one rule. It remembers its last answer: the ranking asks it of every candidate (most share a model
 * and a context) and the call again of the one it picked.
 */
export function optionsFor(req: OptionsRequest, counts: Pick<PromptCounts, "expected">, mode: Config["features"]["contextProtection"]): (model: string, at: NodeContext) => Adjusted {
  let last: { model: string; at: NodeContext; adjusted: Adjusted } | null = null;
  const same = (a: NodeContext, b: NodeContext) => a.loaded === b.loaded && a.automatic === b.automatic && a.trained === b.trained;
  return (model, at) => {
    if (last?.model !== model || !same(last.at, at)) last = { model, at, adjusted: adjustOptions(req, model, fitOn(req, model, at, counts), mode) };
    return last.adjusted;
  };
}

/**
 * Sending these options makes Ollama reload the loaded runner: another num_ctx restarts it (herd's options cut theirs
 * to the trained context, as Ollama does), and its KV cache goes with it. herd sends none only with nothing loaded.
 */
export function reloadsRunner({ num_ctx }: Options, loadedContext: number | undefined): boolean {
  return loadedContext !== undefined && typeof num_ctx === "number" && num_ctx !== loadedContext;
}

export function adjustOptions(req: Pick<Conversation, "options" | "think">, model: string, { at, promptTokens }: Fit, mode: Config["features"]["contextProtection"]): Adjusted {
  const options = { ...req.options };
  const requested = replyCapOf(req);
  const notes: string[] = [];
  let warning: string | null = null;
  const loadedContext = at.loaded;
  if (typeof options.num_ctx === "number" && at.trained !== null && options.num_ctx > at.trained) {
    notes.push(`num_ctx ${options.num_ctx} cut to the model's trained context (${at.trained})`);
    options.num_ctx = at.trained;
  }
  const numCtx = options.num_ctx;
  if (typeof numCtx === "number" && loadedContext && numCtx <= loadedContext && mode !== "passthrough") {
    if (mode === "strip") {
      delete options.num_ctx;
      notes.push(`num_ctx ${numCtx} stripped: the loaded context (${loadedContext}) already fits it`);
    } else warning = `${model}: num_ctx ${numCtx} fits the loaded context (${loadedContext}) but makes Ollama reload the model`;
  }
  const thinking = reasons(model);
  // A cap that is already generous (agents ask for 32k–128k) is left alone: ×4 would only let a runaway run on.
  const raised = requested !== null ? Math.max(requested, Math.min(requested * THINKING_OVERHEAD, THINKING_MAX_PREDICT), THINKING_MIN_PREDICT) : 0;
  if (requested !== null && requested > 0 && raised > requested && req.think !== false && thinking) {
    options.num_predict = raised;
    notes.push(`num_predict raised ${requested} → ${raised} for a thinking model`);
  }
  const thinkingBudget = thinking ? { requested, sent: options.num_predict ?? -1 } : null;
  // After the thinking budget: the reply's room includes the reasoning.
  let overflow: ContextOverflow | null = null;
  if (promptTokens !== null && options.num_ctx === undefined) {
    const size = contextSize(promptTokens, replyCapOf({ options }), at);
    if (size.numCtx !== undefined) options.num_ctx = size.numCtx;
    if (size.note) notes.push(size.note);
    overflow = size.overflow;
  } else if (promptTokens !== null && typeof options.num_ctx === "number" && promptTokens > options.num_ctx) {
    overflow = { estimated: promptTokens, contextLength: options.num_ctx };
  }
  return { options, thinkingBudget, notes, overflow, warning };
}

/** The seed's reasoning-budget diagnostics for a thinking model's finished non-streaming answer: X-Budget-Used is the reply's tokens / the num_predict sent. */
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
