// Pulling models onto nodes: which node gets it, one pull of a model at a time
// fleet-wide, and a clear refusal for models Ollama cannot pull at all.
import type { OllamaSection } from "./heartbeat.ts";
import { expectedSizeGb } from "./model-size.ts";
import { normalizeModelName } from "./model-name.ts";
import { toGb } from "./node-models.ts";
import { diskBytes, type NodeRecord, onDisk, type Registry } from "./registry.ts";
import { OS_RESERVE_GB } from "./scorer.ts";

/** Models that are not Ollama's, and how to install them on a node instead. */
const NOT_OLLAMA: { test: RegExp; what: string; install: string }[] = [
  { test: /^(z-image-turbo|flux-dev|flux-schnell)(:latest)?$/, what: "an mflux image model", install: "uv tool install mflux (then run it on the node)" },
  { test: /^(sd3-medium|sd3\.5-large)(:latest)?$/, what: "a DiffusionKit image model", install: "pip install diffusionkit (then run it on the node)" },
  { test: /^qwen3-asr/, what: "a Qwen3-ASR speech-to-text model", install: "pip install mlx-qwen3-asr (then declare it under nodes[].transcription in herd.config.ts)" },
  { test: /^mlx:|^mlx-community\//, what: "an MLX model", install: "add it to the node's mlx servers in herd.config.ts (nodes[].mlx)" },
];

/** Why `model` cannot be pulled through Ollama, with the install command; null when it can. */
export function notPullable(model: string): string | null {
  const hit = NOT_OLLAMA.find((n) => n.test.test(model.toLowerCase()));
  return hit ? `"${model}" is ${hit.what}, not an Ollama model; install it with: ${hit.install}` : null;
}

export class Pulls {
  /** model → node currently pulling it. */
  private active = new Map<string, string>();

  /** Marks a pull as running; returns the node already pulling this model instead, if any. */
  begin(model: string, nodeId: string): string | null {
    const key = normalizeModelName(model);
    const running = this.active.get(key);
    if (running) return running;
    this.active.set(key, nodeId);
    return null;
  }

  end(model: string): void {
    this.active.delete(normalizeModelName(model));
  }
}

/** The nodes a pull may go to: online, their Ollama reachable, not draining; the most free memory first. */
export function pullTargets(registry: Registry): NodeRecord[] {
  const eligible = registry.all().filter((n) => registry.exclusion(n) === null);
  return eligible.sort((a, b) => (b.report.memory?.available_gb ?? -1) - (a.report.memory?.available_gb ?? -1) || a.id.localeCompare(b.id));
}

/** Where a pull goes: a node that may have room for the model, or why none has. */
export type PullPlace = { node: NodeRecord } | { refused: string };

/**
 * The first of `nodes` (pullTargets' order) that may have room for `model` once pulled, judged by what herd knows of
 * each node's memory: what its agent reports free, else its declared memory less the OS's share; a node herd knows
 * neither of may. The model's size is what a node that has it lists on disk, else the catalog's, else its weights as
 * its name tells them (fleet/model-size.ts); one of no known size goes to the first node. Null when `nodes` is empty.
 */
export function placePull(registry: Registry, model: string, nodes: NodeRecord[]): PullPlace | null {
  if (!nodes.length) return null;
  const onDiskGb = toGb(Math.max(0, ...registry.all().map((n) => diskBytes(n, model))));
  const size = onDiskGb ? { gb: onDiskGb, estimated: false } : expectedSizeGb(model);
  if (!size) return { node: nodes[0]! };
  const judged = nodes.map((node) => ({ node, room: roomOf(registry, node) }));
  const roomy = judged.find(({ room }) => room === null || room.gb >= size.gb);
  if (roomy) return { node: roomy.node };
  const arithmetic = judged.map(({ node, room }) => `${node.id} has ${room!.says}, ${Math.round((size.gb - room!.gb) * 10) / 10} GB short`).join("; ");
  const needs = size.estimated ? `~${size.gb} GB, estimated from its name` : `${size.gb} GB`;
  return { refused: `No node has enough available memory for "${model}" (${needs}): ${arithmetic}` };
}

/** The most memory `node` may give a model, in GB, and how herd knows it; null when herd does not. */
function roomOf(registry: Registry, node: NodeRecord): { gb: number; says: string } | null {
  const free = node.report.memory?.available_gb;
  if (free !== undefined) return { gb: free, says: `${free} GB available` };
  const total = registry.hardware(node).memoryTotalGb;
  return total === null ? null : { gb: total - OS_RESERVE_GB, says: `${total - OS_RESERVE_GB} GB (${total} GB less a ${OS_RESERVE_GB} GB OS reserve)` };
}

/** After a pull (or a copy or create) through herd the model is on the node's disk: say so now rather than at the next heartbeat. */
export function markPulled(node: NodeRecord, model: string, now = Date.now()): void {
  const ollama: OllamaSection | null = node.ollama;
  if (!ollama) return;
  node.pulledAt.set(normalizeModelName(model), now);
  if (!onDisk(node, model)) ollama.models_available = [...ollama.models_available, { name: normalizeModelName(model) }];
}
