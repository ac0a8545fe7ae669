// A Mac that runs hot is throttled by macOS: its tokens per second drop and the
// scorer's idea of it is too rosy.
import { fold, type HealthCheck, type Problem } from "../types.ts";

const SEVERITY = { fair: "info", serious: "warning", critical: "critical" } as const;

export const thermal: HealthCheck = {
  id: "thermal",
  name: "Thermal state",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node): Problem[] => {
      const state = node.report.thermal?.state;
      if (node.status === "offline" || !state || state === "nominal") return [];
      return [
        {
          severity: SEVERITY[state],
          node: node.id,
          finding: `${node.id}: thermal state ${state}${state === "fair" ? "" : " (macOS is throttling it)"}`,
          recommendation: `give ${node.id} more airflow, or drain it (nodes[].draining) until it cools down.`,
          details: { state },
        },
      ];
    });
    return fold(problems, "no node running hot");
  },
};
