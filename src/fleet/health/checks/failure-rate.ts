// The thresholds error_rate and embed_error_rate share: a failed share of the
// last hour's requests, judged only once there are enough requests to judge.
import type { ModelTraffic } from "../../../store/health-stats.ts";
import type { Problem } from "../types.ts";

export const MIN_REQUESTS = 5;
export const WARNING_SHARE = 0.05;
const CRITICAL_SHARE = 0.25;

/** The severity of `failed` out of `requests`, or null when it is fine (or too few to say). */
export function failureSeverity(failed: number, requests: number): Problem["severity"] | null {
  if (requests < MIN_REQUESTS || failed === 0) return null;
  const share = failed / requests;
  return share >= CRITICAL_SHARE ? "critical" : share >= WARNING_SHARE ? "warning" : null;
}

/** "llama3.2:3b 4, qwen3:8b 1": the models behind a count, most first. */
export function byModel(traffic: ModelTraffic[], count: (t: ModelTraffic) => number): string {
  return traffic
    .filter((t) => count(t) > 0)
    .sort((a, b) => count(b) - count(a))
    .map((t) => `${t.model} ${count(t)}`)
    .join(", ");
}
