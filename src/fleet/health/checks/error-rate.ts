// Chat and generate requests that ended in an error, per model, over the last
// hour (embeddings have their own check).
import { fold, type HealthCheck, pct, type Problem } from "../types.ts";
import { failureSeverity, MIN_REQUESTS, WARNING_SHARE } from "./failure-rate.ts";

export const errorRate: HealthCheck = {
  id: "error_rate",
  name: "Error rate",
  run({ lastHour }) {
    const problems: Problem[] = lastHour
      .filter((t) => !t.embed)
      .flatMap((t): Problem[] => {
        const severity = failureSeverity(t.failed, t.requests);
        if (!severity) return [];
        return [
          {
            severity,
            finding: `${t.model}: ${t.failed} of ${t.requests} requests failed in the last hour (${pct(t.failed / t.requests)})`,
            recommendation: "see the failed traces (GET /dashboard/api/traces) for the node and the error, and check that node.",
            details: { model: t.model, failed: t.failed, requests: t.requests },
          },
        ];
      });
    return fold(problems, `no model failed ${pct(WARNING_SHARE)} or more of its requests in the last hour (of models with ${MIN_REQUESTS}+ requests)`);
  },
};
