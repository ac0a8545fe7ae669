// A node short of disk where its models go cannot pull a model, and Ollama
// fails in odd ways when its model store fills up. Each volume holding models
// is checked (Ollama's store, the Hugging Face cache of MLX and media models);
// an agent that reports no volumes is judged by its `disk`.
import type { DiskVolume } from "../../heartbeat.ts";
import { fold, type HealthCheck, type NodeInput, type Problem } from "../types.ts";

/** Below this a pull of a mid-size model fails. */
const WARNING_GB = 20;
const CRITICAL_GB = 5;

/** What a volume holds, in the finding's words, and how to free it (mlx_lm.manage: mlx-lm's mlx_lm/manage.py, --scan and --delete). */
const HOLDS: Record<string, { what: string; fix: (node: string) => string }> = {
  ollama: { what: "Ollama's models", fix: (node) => `delete models ${node} no longer needs (ollama rm MODEL)` },
  huggingface: { what: "the Hugging Face cache", fix: (node) => `delete MLX models ${node} no longer needs from the Hugging Face cache (mlx_lm.manage --delete --pattern MODEL)` },
};

function volumesOf(node: NodeInput): (Omit<DiskVolume, "path"> & { path?: string })[] {
  const { disk_volumes: volumes, disk } = node.report;
  return volumes ?? (disk ? [{ ...disk, holds: [] }] : []);
}

export const diskSpaceLow: HealthCheck = {
  id: "disk_space_low",
  name: "Disk space",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node): Problem[] => {
      if (node.status === "offline") return [];
      // A total of 0 is a disk the agent could not read.
      return volumesOf(node).flatMap((volume): Problem[] => {
        if (!volume.total_gb || volume.available_gb >= WARNING_GB) return [];
        const known = volume.holds.flatMap((h) => HOLDS[h] ?? []);
        const of = `${node.id}: ${volume.available_gb} GB of ${volume.total_gb} GB`;
        const fixes = (known.length ? known : [HOLDS.ollama!]).map((k) => k.fix(node.id)).join(", or ");
        return [
          {
            severity: volume.available_gb < CRITICAL_GB ? "critical" : "warning",
            node: node.id,
            finding: known.length ? `${of} free on the disk of ${known.map((k) => k.what).join(" and ")} (${volume.path})` : `${of} disk free`,
            recommendation: `${fixes}, or free disk space there.`,
            details: { available_gb: volume.available_gb, total_gb: volume.total_gb, holds: volume.holds, path: volume.path ?? null },
          },
        ];
      });
    });
    return fold(problems, `every node has at least ${WARNING_GB} GB of disk free where its models go`);
  },
};
