// Context fitting, for a request that asks for it (fitContext: the Anthropic surface, whose
// agents resend long histories): when the prompt outgrows what the serving model was trained for
// (herd sizes num_ctx up to that per node) or the router's cap (anthropic.maxPromptTokens), old
// tool results are cleared first (router/context-management.ts), then the oldest turns are
// summarised by a model of the fleet (router/compaction.ts); what still does not fit is refused
// with a 413, not cut by Ollama.
import type { Config } from "../config/schema.ts";
import type { InferenceRequest } from "../core/request.ts";
import { cachedTokens } from "../core/session.ts";
import { RouteError } from "../errors.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";
import { type Summarise, SUMMARY_INPUT_TOKENS, SUMMARY_TIMEOUT_MS, summariseOldest } from "../router/compaction.ts";
import { fitToContext, promptLimit } from "../router/context-management.ts";

/** Fits the request's prompt (its messages, promptTokens and session), or says why it cannot. */
export async function fitContext(modelFacts: Pick<ModelFacts, "contextLength">, config: Config, summarise: Summarise, req: InferenceRequest): Promise<RouteError | null> {
  if (!req.fitContext) return null;
  const { maxPromptTokens, summaryModel } = config.anthropic;
  const trained = await modelFacts.contextLength(req.model);
  const limit = promptLimit(trained ?? undefined, req.fitContext.replyTokens, maxPromptTokens);
  const cleared = await fitToContext(req, req.promptTokens, limit);
  const notes = cleared.note ? [cleared.note] : [];
  let tokens = cleared.tokens;
  if (tokens > limit) {
    const model = summaryModel ?? req.model;
    // Half the summarising model's context at most: room for its instructions, its reply and a tokenizer unlike herd's.
    const context = await modelFacts.contextLength(model);
    const inputTokens = Math.min(SUMMARY_INPUT_TOKENS, context ? Math.floor(context / 2) : SUMMARY_INPUT_TOKENS);
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(SUMMARY_TIMEOUT_MS)]);
    const summarised = await summariseOldest(req.messages ?? [], tokens, limit, { model, summarise, inputTokens, signal });
    if ("failed" in summarised) {
      const over = limit < maxPromptTokens ? `over what ${req.model} can take (${trained}-token context, less room for the reply)` : `over this router's limit of ${maxPromptTokens} (anthropic.maxPromptTokens)`;
      return new RouteError(413, `prompt is too long: about ${tokens} tokens, ${over}; ${summarised.failed}. Run /compact in Claude Code (or shorten the conversation) and resubmit.`);
    }
    tokens = summarised.tokens;
    notes.push(summarised.note);
  }
  if (!notes.length) return null;
  req.promptTokens = tokens;
  req.adjustments = [...(req.adjustments ?? []), ...notes];
  // What was cleared or summarised is no longer the prompt the last turn's node holds.
  if (req.session) req.session = { ...req.session, cachedTokens: cachedTokens(req) };
  return null;
}
