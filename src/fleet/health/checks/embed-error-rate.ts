// Embedding requests that failed in the last hour, whatever served them: a
// retrieval pipeline usually fails whole when its embeddings do.
import { fold, type HealthCheck, pct } from "../types.ts";
import { byModel, failureSeverity, WARNING_SHARE } from "./failure-rate.ts";

export const embedErrorRate: HealthCheck = {
  id: "embed_error_rate",
  name: "Embedding errors",
  run({ lastHour }) {
    const embeds = lastHour.filter((t) => t.embed);
    const requests = embeds.reduce((n, t) => n + t.requests, 0);
    const failed = embeds.reduce((n, t) => n + t.failed, 0);
    const severity = failureSeverity(failed, requests);
    if (!severity) return fold([], failed ? `${failed} of ${requests} embedding requests failed in the last hour` : `no embedding request failed ${pct(WARNING_SHARE)} or more in the last hour`);
    return fold(
      [
        {
          severity,
          finding: `${failed} of ${requests} embedding requests failed in the last hour (${pct(failed / requests)}): ${byModel(embeds, (t) => t.failed)}`,
          recommendation: "see the failed embed traces (GET /dashboard/api/traces) and check the nodes holding those models.",
          details: { failed, requests },
        },
      ],
      "",
    );
  },
};
