// A node short of disk cannot pull a model, and Ollama fails in odd ways when
// its model store fills up.
import { fold, type HealthCheck, type Problem } from "../types.ts";

/** Below this a pull of a mid-size model fails. */
const WARNING_GB = 20;
const CRITICAL_GB = 5;

export const diskSpaceLow: HealthCheck = {
  id: "disk_space_low",
  name: "Disk space",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node): Problem[] => {
      const disk = node.report.disk;
      // A total of 0 is a disk the agent could not read.
      if (node.status === "offline" || !disk?.total_gb || disk.available_gb >= WARNING_GB) return [];
      return [
        {
          severity: disk.available_gb < CRITICAL_GB ? "critical" : "warning",
          node: node.id,
          finding: `${node.id}: ${disk.available_gb} GB of ${disk.total_gb} GB disk free`,
          recommendation: `delete models ${node.id} no longer needs (ollama rm) or free disk space there.`,
          details: { available_gb: disk.available_gb, total_gb: disk.total_gb },
        },
      ];
    });
    return fold(problems, `every node has at least ${WARNING_GB} GB of disk free`);
  },
};
