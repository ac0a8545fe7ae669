// Pulling models onto nodes: which node gets it, one pull of a model at a time
// fleet-wide, and a clear refusal for models Ollama cannot pull at all.
import type { OllamaSection } from "./heartbeat.ts";
import { catalogModel } from "./model-catalog.ts";
import { normalizeModelName } from "./model-name.ts";
import { toGb } from "./node-models.ts";
import { diskBytes, type NodeRecord, onDisk, type Registry } from "./registry.ts";

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

/**
 * Why none of `nodes` has the memory to run `model` once pulled, with the arithmetic; null when one may have it. The size
 * is what a node that has it lists on disk, else the catalog's; a model of unknown size, or a node that reports no free
 * memory, is never refused.
 */
export function noRoomFor(registry: Registry, model: string, nodes: NodeRecord[]): string | null {
  const onDiskGb = toGb(Math.max(0, ...registry.all().map((n) => diskBytes(n, model))));
  const sizeGb = onDiskGb || catalogModel(model)?.ram_gb;
  if (!sizeGb || !nodes.length) return null;
  const free = nodes.map((n) => ({ id: n.id, gb: n.report.memory?.available_gb }));
  if (free.some((f) => f.gb === undefined || f.gb >= sizeGb)) return null;
  const arithmetic = free.map((f) => `${f.id} has ${f.gb} GB available, ${Math.round((sizeGb - f.gb!) * 10) / 10} GB short`).join("; ");
  return `No node has enough available memory for "${model}" (${sizeGb} GB): ${arithmetic}`;
}

/** After a pull (or a copy or create) through herd the model is on the node's disk: say so now rather than at the next heartbeat. */
export function markPulled(node: NodeRecord, model: string, now = Date.now()): void {
  const ollama: OllamaSection | null = node.ollama;
  if (!ollama) return;
  node.pulledAt.set(normalizeModelName(model), now);
  if (!onDisk(node, model)) ollama.models_available = [...ollama.models_available, { name: normalizeModelName(model) }];
}
