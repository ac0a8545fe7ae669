// Ollama's `think` for the model that serves, as the client asked (ThinkAsk): Anthropic's
// enabled/disabled only on a model whose capabilities list thinking (a lookup, remembered per
// model: Ollama refuses think:true elsewhere), an OpenAI reasoning effort by the model's family.
import type { InferenceRequest } from "../core/request.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";
import { effortThink } from "../fleet/thinking-models.ts";

export async function decideThink(modelFacts: Pick<ModelFacts, "canThink">, req: InferenceRequest): Promise<void> {
  const ask = req.thinkAsk;
  if (!ask) return;
  const think = "effort" in ask ? effortThink(ask.effort, req.model) : (await modelFacts.canThink(req.model)) ? ask.think : undefined;
  if (think !== undefined) req.think = think;
}
