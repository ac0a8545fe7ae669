// Requests that reached their answer only after other nodes failed them: the
// clients are fine, but a node keeps failing before its first byte.
import { fold, type HealthCheck, type Problem } from "../types.ts";
import { MIN_REQUESTS } from "./failure-rate.ts";

/** Retries per request above which a node is failing often enough to look at. */
const WARNING_RETRIES_PER_REQUEST = 0.3;

export const retryRate: HealthCheck = {
  id: "retry_rate",
  name: "Retry rate",
  run({ lastHour }) {
    const problems: Problem[] = lastHour
      .filter((t) => t.requests >= MIN_REQUESTS && t.retries / t.requests >= WARNING_RETRIES_PER_REQUEST)
      .map((t): Problem => ({
        severity: "warning",
        finding: `${t.model}: ${t.retries} retries over ${t.requests} requests in the last hour (${(t.retries / t.requests).toFixed(1)} per request)`,
        recommendation: "a node fails these requests before answering: see excluded_nodes in the traces (GET /dashboard/api/traces) and check that node.",
        details: { model: t.model, retries: t.retries, requests: t.requests },
      }));
    return fold(problems, `fewer than ${WARNING_RETRIES_PER_REQUEST} retries per request for every model in the last hour`);
  },
};
