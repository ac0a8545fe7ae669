// Context fitting, for a request that asks for it (fitContext: the Anthropic surface, whose
// agents resend long tool-result histories): when the prompt outgrows what the serving model was
// trained for (herd sizes num_ctx up to that per node) or the router's cap
// (anthropic.maxPromptTokens), old tool results are cleared first (router/context-management.ts);
// what still does not fit is refused with a 413, not cut by Ollama.
import type { Config } from "../config/schema.ts";
import type { InferenceRequest } from "../core/request.ts";
import { cachedTokens } from "../core/session.ts";
import { RouteError } from "../errors.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";
import { fitToContext, promptLimit } from "../router/context-management.ts";

/** Fits the request's prompt (its messages, promptTokens and session), or says why it cannot. */
export async function fitContext(modelFacts: Pick<ModelFacts, "contextLength">, config: Config, req: InferenceRequest): Promise<RouteError | null> {
  if (!req.fitContext) return null;
  const { maxPromptTokens } = config.anthropic;
  const trained = await modelFacts.contextLength(req.model);
  const limit = promptLimit(trained ?? undefined, req.fitContext.replyTokens, maxPromptTokens);
  const fitted = await fitToContext(req, req.promptTokens, limit);
  if (fitted.tokens > limit) {
    const over = limit < maxPromptTokens ? `over what ${req.model} can take (${trained}-token context, less room for the reply)` : `over this router's limit of ${maxPromptTokens} (anthropic.maxPromptTokens)`;
    return new RouteError(413, `prompt is too long: about ${fitted.tokens} tokens, ${over}. Run /compact in Claude Code (or shorten the conversation) and resubmit.`);
  }
  if (!fitted.note) return null;
  req.promptTokens = fitted.tokens;
  req.adjustments = [...(req.adjustments ?? []), fitted.note];
  // The cleared results are no longer the prompt the last turn's node holds.
  if (req.session) req.session = { ...req.session, cachedTokens: cachedTokens(req) };
  return null;
}
