// The image models the fleet offers (the image service a node agent runs over mflux / DiffusionKit,
// or Ollama's experimental x/ models), read from the nodes' reports for the listing routes, and the
// image job's fields: POST /api/generate-image's body and what the router sends a node's image service.
import * as v from "valibot";
import { modelNameCheck, sameModel } from "./model-name.ts";
import { servesImages } from "./ollama-releases.ts";
import type { NodeRecord, Registry } from "./registry.ts";

/** A side of an image, in pixels. */
const imageSide = v.pipe(v.number(), v.integer("expected a whole number of pixels"), v.minValue(64), v.maxValue(4096));

/** The knobs every image request may turn; left out, the model's configured default or the CLI's own applies. */
export const imageOptions = {
  steps: v.optional(v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(1), v.maxValue(1000))),
  seed: v.optional(v.pipe(v.number(), v.integer("expected a whole number"), v.minValue(0))),
  quantize: v.optional(v.picklist([3, 4, 5, 6, 8], "expected 3, 4, 5, 6 or 8")),
  guidance: v.optional(v.pipe(v.number(), v.minValue(0))),
  negative_prompt: v.optional(v.string(), ""),
};

export const imageModelField = v.pipe(v.string(), v.trim(), v.nonEmpty("expected an image model name"), modelNameCheck);
export const promptField = v.pipe(v.string(), v.nonEmpty("expected a description of the image"));

/** POST /api/generate-image's body (seed 000), and what the router sends a node's image service. */
export const imageJobSchema = v.object({
  model: imageModelField,
  prompt: promptField,
  width: v.optional(imageSide, 1024),
  height: v.optional(imageSide, 1024),
  ...imageOptions,
});

export type ImageJob = v.InferOutput<typeof imageJobSchema>;

/** Ollama's experimental image models are published under x/ (x/z-image-turbo, x/flux2-klein). */
export function isOllamaImageModel(name: string): boolean {
  return name.startsWith("x/");
}

/** The node's Ollama answers and is a release that generates images (not before 0.14.3, nor from 0.32.6). */
export function ollamaGeneratesImages(node: NodeRecord): boolean {
  return Boolean(node.ollama?.reachable) && servesImages(node.ollama?.version);
}

export interface FleetImageModel {
  name: string;
  type: "image";
  /** mflux or diffusionkit (a node agent's image service), or ollama (an x/ model). */
  backend: string;
  fleet_nodes: string[];
}

/** Every image model an online node offers, once per name and backend, with the nodes that have it. */
export function fleetImageModels(registry: Registry): FleetImageModel[] {
  const models = new Map<string, FleetImageModel>();
  const add = (name: string, backend: string, nodeId: string) => {
    const entry = models.get(`${backend}\n${name}`) ?? { name, type: "image" as const, backend, fleet_nodes: [] };
    entry.fleet_nodes.push(nodeId);
    models.set(`${backend}\n${name}`, entry);
  };
  for (const node of registry.all().filter((n) => n.status === "online")) {
    if (node.report.image_port) for (const m of node.report.image_models ?? []) add(m.name, m.backend, node.id);
    for (const m of ollamaGeneratesImages(node) ? node.ollama!.models_available : []) if (isOllamaImageModel(m.name)) add(m.name, "ollama", node.id);
  }
  return [...models.values()];
}

/** The image model `model` is on an agent's image service, if any node offers it (for /api/pull's refusal). */
export function serviceImageModel(registry: Registry, model: string): FleetImageModel | undefined {
  return fleetImageModels(registry).find((m) => m.backend !== "ollama" && sameModel(m.name, model));
}
