// macOS's memory pressure on a node: under pressure a model load swaps or
// evicts, and every request on that node slows down.
import { fold, type HealthCheck, type Problem } from "../types.ts";

export const memoryPressure: HealthCheck = {
  id: "memory_pressure",
  name: "Memory pressure",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node): Problem[] => {
      const memory = node.report.memory;
      if (node.status === "offline" || !memory || memory.pressure === "nominal") return [];
      return [
        {
          severity: memory.pressure,
          node: node.id,
          finding: `${node.id}: memory pressure ${memory.pressure} (${memory.available_gb} GB of ${memory.total_gb} GB free)`,
          recommendation: `unload or unpin a model on ${node.id}, or lower num_ctx.`,
          details: { pressure: memory.pressure, available_gb: memory.available_gb, total_gb: memory.total_gb },
        },
      ];
    });
    return fold(problems, "no node under memory pressure");
  },
};
