// The same model loaded again and again on one node: each load stalls its
// requests for seconds to minutes. The node lacks memory for its working set.
import { fold, type HealthCheck, type Problem } from "../types.ts";

const WINDOW_MS = 60 * 60_000;
const WARNING_LOADS = 3;
const CRITICAL_LOADS = 6;

export const modelThrashing: HealthCheck = {
  id: "model_thrashing",
  name: "Model thrashing",
  run({ nodes, now }) {
    const problems: Problem[] = [];
    for (const node of nodes) {
      const loads = new Map<string, number>();
      for (const e of node.loadEvents) if (e.event === "load" && now - e.at <= WINDOW_MS) loads.set(e.model, (loads.get(e.model) ?? 0) + 1);
      for (const [model, count] of loads) {
        if (count < WARNING_LOADS) continue;
        problems.push({
          severity: count >= CRITICAL_LOADS ? "critical" : "warning",
          node: node.id,
          finding: `${node.id} loaded ${model} ${count} times in the last hour`,
          recommendation: `${node.id} cannot keep its models resident together: pin the busiest one (POST /fleet/pin), move others to another node, or lower num_ctx.`,
          details: { model, loads: count },
        });
      }
    }
    return fold(problems, `no model loaded ${WARNING_LOADS} or more times on one node in the last hour`);
  },
};
