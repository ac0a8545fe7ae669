// Requests still in flight long after any answer should have ended: a node
// that stopped answering mid-stream, or a connection nobody closed. Each holds
// one of the node's parallel slots. Ages are exact: queues keep each slot's start.
import { duration, fold, type HealthCheck, type Problem } from "../types.ts";

export const zombieRequests: HealthCheck = {
  id: "zombie_requests",
  name: "Zombie requests",
  run({ queues, config, now }) {
    const staleMs = config.timeouts.staleRequestMs;
    const problems: Problem[] = queues.flatMap((q): Problem[] => {
      const age = q.oldest_running_since === null ? 0 : now - q.oldest_running_since;
      if (age <= staleMs) return [];
      return [{
        severity: "warning",
        node: q.node_id,
        finding: `${q.node_id}: a request for ${q.model} in flight for ${duration(age)} (timeouts.staleRequestMs ${duration(staleMs)})`,
        recommendation: `check Ollama on ${q.node_id}; restart it if those requests never finish (their clients may be gone).`,
        details: { model: q.model, in_flight: q.in_flight, oldest_ms: age },
      }];
    });
    return fold(problems, `no request in flight longer than ${duration(staleMs)}`);
  },
};
