// Requests that failed because a node (or its queue) did not answer in time:
// cold loads of big models, a wedged Ollama, a node over capacity.
import { fold, type HealthCheck } from "../types.ts";
import { byModel } from "./failure-rate.ts";

const CRITICAL_TIMEOUTS = 10;

export const requestTimeouts: HealthCheck = {
  id: "request_timeouts",
  name: "Request timeouts",
  run({ lastHour, config }) {
    const timeouts = lastHour.reduce((n, t) => n + t.timeouts, 0);
    if (!timeouts) return fold([], "no request timed out in the last hour");
    return fold(
      [
        {
          severity: timeouts >= CRITICAL_TIMEOUTS ? "critical" : "warning",
          finding: `${timeouts} request(s) timed out in the last hour: ${byModel(lastHour, (t) => t.timeouts)}`,
          recommendation: `check the nodes serving those models (a wedged Ollama, slow cold loads); raise timeouts.firstByteMs (now ${config.timeouts.firstByteMs} ms) if big models need longer to load.`,
          details: { timeouts },
        },
      ],
      "",
    );
  },
};
