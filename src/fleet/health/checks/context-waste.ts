// A model loaded with a context window far larger than its requests use: the
// KV cache for the unused part takes memory other models could have.
import { sameModel } from "../../model-name.ts";
import { fold, type HealthCheck, type Problem } from "../types.ts";

/** Windows this small cost little whatever the use. */
const MIN_ALLOCATED = 16_384;
const MIN_REQUESTS = 5;
/** allocated ≥ 4× what is needed */
const INFO_SAVINGS_PCT = 75;
/** allocated ≥ 8× what is needed */
const WARNING_SAVINGS_PCT = 87.5;

export const contextWaste: HealthCheck = {
  id: "context_waste",
  name: "Context waste",
  run({ contextUsage, nodes }) {
    const problems: Problem[] = contextUsage
      .filter((u) => u.allocated_ctx !== null && u.allocated_ctx >= MIN_ALLOCATED && u.request_count >= MIN_REQUESTS && (u.savings_pct ?? 0) >= INFO_SAVINGS_PCT)
      .flatMap((u) => {
        const holders = nodes.filter((n) => n.status === "online" && (n.ollama?.models_loaded ?? []).some((m) => sameModel(m.name, u.model) && m.context_length === u.allocated_ctx));
        return holders.map((n): Problem => ({
          severity: u.savings_pct! >= WARNING_SAVINGS_PCT ? "warning" : "info",
          node: n.id,
          finding: `${u.model} on ${n.id} is loaded with num_ctx ${u.allocated_ctx} but 99% of its ${u.request_count} requests use ≤ ${u.total_tokens.p99} tokens (${u.utilization_pct}%)`,
          recommendation: `load ${u.model} with num_ctx ${u.recommended_ctx} (OLLAMA_CONTEXT_LENGTH or a Modelfile PARAMETER num_ctx) to free ${u.savings_pct}% of its KV cache; see GET /dashboard/api/context-usage.`,
          details: { model: u.model, allocated_ctx: u.allocated_ctx, recommended_ctx: u.recommended_ctx, savings_pct: u.savings_pct },
        }));
      });
    return fold(problems, "no model loaded with a context window 4× or more beyond what its requests use");
  },
};
