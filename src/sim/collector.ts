// A simulated node's machine, as a node agent would report it: memory from the
// sim's own residency, hardware as declared, and the rest (pressure override,
// thermal state, free disk, embedding backends) from POST /_sim {"machine": …}.
// With it the real agent (src/node/agent.ts) reports a simulated node exactly
// as it reports a Mac.
import { diskReport, type EmbeddingBackends, pressureFromAvailable, type SystemCollector } from "../node/collectors.ts";
import type { SimNode } from "./index.ts";
import { SIM_DISK_GB } from "./machine.ts";

export interface SimHardware {
  chip: string;
  memoryBandwidthGbps: number;
  coresPhysical?: number;
}

/** Where a running native text embedding server listens (Ollama Herd's default). */
const TEXT_EMBEDDING_PORT = 11439;
const DEFAULT_DISK_AVAILABLE_GB = 500;
const SIM_DISK_PATH = "/simulated/.ollama/models";
const SIM_THERMAL_UNKNOWN = "the simulated machine reads no thermal state (POST /_sim machine.thermal)";

export function simCollector(node: SimNode, hw: SimHardware): SystemCollector {
  const cores = hw.coresPhysical ?? 12;
  return {
    cpu: () => ({ cores_physical: cores, utilization_pct: Math.min(100, node.state().inFlight * 10) }),
    async memory() {
      const { memoryGb = 0, usedGb = 0, machine } = node.state();
      const available = Math.max(0, memoryGb - usedGb);
      const pressure = machine.pressure ?? (memoryGb > 0 ? pressureFromAvailable({ total: memoryGb, available }) : "nominal");
      return { total_gb: memoryGb, used_gb: round(usedGb), available_gb: round(available), pressure };
    },
    async hardware() {
      return { memory_total_gb: node.state().memoryGb ?? 0, cores_physical: cores, chip: hw.chip, memory_bandwidth_gbps: hw.memoryBandwidthGbps, arch: "apple_silicon" };
    },
    // One simulated disk holds both model stores.
    async disks() {
      const available = node.state().machine.diskAvailableGb ?? DEFAULT_DISK_AVAILABLE_GB;
      return diskReport([{ holds: ["ollama", "huggingface"], path: SIM_DISK_PATH, total_gb: SIM_DISK_GB, available_gb: available }]);
    },
    async thermal() {
      const state = node.state().machine.thermal ?? "nominal";
      return state === "unknown" ? { state, reason: SIM_THERMAL_UNKNOWN } : { state };
    },
    async embedding() {
      return embeddingReport(node);
    },
  };
}

// Always every field: null says "none", so it also clears what an earlier heartbeat reported.
function embeddingReport(node: SimNode): EmbeddingBackends {
  const { visionEmbedding: vision, textEmbedding: text } = node.state().machine;
  const status = (b: { backendAvailable: boolean; cachedModels: number } | undefined) =>
    b ? { backend_available: b.backendAvailable, cached_model_count: b.cachedModels } : null;
  const running = text?.running === true;
  return {
    vision_embedding_status: status(vision),
    text_embedding_status: status(text),
    text_embedding: running ? { models_available: [{ name: "nomic-embed-text", dimensions: 768, cached: text!.cachedModels > 0 }], processing: false } : null,
    text_embedding_port: running ? TEXT_EMBEDDING_PORT : null,
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
