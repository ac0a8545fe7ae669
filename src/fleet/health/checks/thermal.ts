// A Mac that runs hot is throttled by macOS: its tokens per second drop and the
// scorer's idea of it is too rosy. A node whose agent cannot read the state is
// said so, with the agent's reason: it may be throttling unseen.
import { thermalOf } from "../../heartbeat.ts";
import { fold, type HealthCheck, type Problem } from "../types.ts";

const SEVERITY = { fair: "info", serious: "warning", critical: "critical" } as const;

export const thermal: HealthCheck = {
  id: "thermal",
  name: "Thermal state",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node): Problem[] => {
      const reading = thermalOf(node.report);
      if (node.status === "offline" || !reading || reading.state === "nominal") return [];
      if (reading.state === "unknown") {
        return [
          {
            severity: "info",
            node: node.id,
            finding: `${node.id}: thermal state unknown (${reading.reason})`,
            recommendation: `herd cannot see whether ${node.id} throttles: it reads macOS's NSProcessInfo.thermalState, which that agent could not.`,
            details: { state: "unknown", reason: reading.reason },
          },
        ];
      }
      const { state } = reading;
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
    return fold(problems, "no node reports running hot");
  },
};
