// A simulated node's machine, as a node agent would report it: memory from the
// sim's own residency, hardware as declared. With it the real agent
// (src/node/agent.ts) reports a simulated node exactly as it reports a Mac.
import type { SystemCollector } from "../node/collectors.ts";
import type { SimNode } from "./index.ts";

export interface SimHardware {
  chip: string;
  memoryBandwidthGbps: number;
  coresPhysical?: number;
}

export function simCollector(node: SimNode, hw: SimHardware): SystemCollector {
  const cores = hw.coresPhysical ?? 12;
  return {
    cpu: () => ({ cores_physical: cores, utilization_pct: Math.min(100, node.state().inFlight * 10) }),
    async memory() {
      const { memoryGb = 0, usedGb = 0 } = node.state();
      const available = Math.max(0, memoryGb - usedGb);
      const pressure = available < memoryGb * 0.05 ? "critical" : available < memoryGb * 0.15 ? "warning" : "nominal";
      return { total_gb: memoryGb, used_gb: round(usedGb), available_gb: round(available), pressure };
    },
    async hardware() {
      return { memory_total_gb: node.state().memoryGb ?? 0, cores_physical: cores, chip: hw.chip, memory_bandwidth_gbps: hw.memoryBandwidthGbps, arch: "apple_silicon" };
    },
    async disk() {
      return { total_gb: 1000, available_gb: 500 };
    },
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
