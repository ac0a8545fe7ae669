// Image generation on the fleet: one generation on a node (the image service a node agent runs over
// mflux / DiffusionKit, or Ollama's experimental x/ models), tried on the least busy node that
// offers the model first. Which nodes offer which models, and the job's fields: fleet/image-models.ts.
import { agentToken } from "../config/credentials/keys.ts";
import { type Config, nodeAnswerCap } from "../config/schema.ts";
import type { GeneratedImage, ImageRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { fleetImageModels, type ImageJob, isOllamaImageModel, ollamaGeneratesImages } from "../fleet/image-models.ts";
import { ollamaHerdAgent } from "../fleet/ollama-herd.ts";
import type { Queues } from "../fleet/queues.ts";
import { type NodeRecord, onDisk, type Registry } from "../fleet/registry.ts";
import { callNode, errorOf, type ServiceCall, type ServiceJob, serviceNodes } from "./node-service.ts";

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** How `node` generates `model`: its agent's image service, Ollama, or not at all. */
function backendOn(node: NodeRecord, model: string): "service" | "ollama" | null {
  if (node.report.image_port && (node.report.image_models ?? []).some((m) => m.name === model)) return "service";
  if (isOllamaImageModel(model) && ollamaGeneratesImages(node) && onDisk(node, model)) return "ollama";
  return null;
}

/** Where `req` can run: the nodes that offer its model, least busy first; a RouteError when none does or generation is off. */
export function imageJob(registry: Registry, queues: Queues, config: Config, req: ImageRequest): ServiceJob<GeneratedImage> {
  if (!config.features.imageGeneration) throw new RouteError(503, "image generation is disabled on this router (features.imageGeneration); turn it on in the config");
  const nodes = serviceNodes(registry, queues, (n) => backendOn(n, req.model) !== null);
  if (!nodes.length) {
    const known = [...new Set(fleetImageModels(registry).map((m) => m.name))].sort();
    const stranded = registry.all().filter((n) => n.status === "online" && isOllamaImageModel(req.model) && onDisk(n, req.model));
    if (stranded.length) {
      const on = stranded.map((n) => `${n.id} (Ollama ${n.ollama?.version ?? "of unknown version"})`).join(", ");
      throw new RouteError(404, `image model "${req.model}" is on ${on}, but Ollama generates images only from 0.14.3 until 0.32.6, which removed it; serve it from an image service (nodes[].images) instead`);
    }
    throw new RouteError(404, `image model "${req.model}" is not available on any node; ${known.length ? `the fleet has: ${known.join(", ")}` : "no node offers image generation (nodes[].images in the config)"}`);
  }
  return {
    model: req.model,
    nodes,
    call: async (n, signal) =>
      backendOn(n, req.model) === "service"
        ? { value: await onService(registry, n, serviceJob(req), { timeoutMs: config.timeouts.imageMs, maxAnswer: nodeAnswerCap(config), credential: ollamaHerdAgent(n) ? null : agentToken(config, n.id), signal }), backend: "image" }
        : { value: await onOllama(registry, n, req, { timeoutMs: config.timeouts.imageMs, maxAnswer: nodeAnswerCap(config), signal }), backend: "ollama" },
  };
}

/** The request as a node agent's image service reads it: herd's (node/services-images.ts) and Ollama Herd's (node/image_server.py) take the same fields. */
function serviceJob({ model, prompt, width, height, steps, seed, quantize, guidance, negativePrompt }: ImageRequest): ImageJob {
  return { model, prompt, width, height, steps, seed, quantize, guidance, negative_prompt: negativePrompt };
}

/**
 * Through the node agent's image service: it runs the CLI and answers with the PNG. herd's and Ollama Herd's
 * (node/image_server.py: a 404 for a model it lacks, a 500 for a failed CLI, a 504 past its 180 s) serve the same
 * route; Ollama Herd's takes no credential, so herd's is not sent to it.
 */
async function onService(registry: Registry, node: NodeRecord, job: ImageJob, call: ServiceCall): Promise<GeneratedImage> {
  const url = registry.serviceUrl(node, node.report.image_port!);
  if (!url) throw new NodeFailure("no address for its image service");
  const started = performance.now();
  const { res, bytes } = await callNode(`${url}/api/generate-image`, { method: "POST", body: JSON.stringify(job) }, { ...call, headers: { "content-type": "application/json" }, timeoutStatus: 502 });
  // The node stopped offering the model since its last heartbeat: another node may still have it.
  if (res.status === 404) throw new NodeFailure(errorOf(res, bytes));
  if (!res.ok) throw new RouteError(502, `image generation failed on ${node.id}: ${errorOf(res, bytes)}`);
  if (!isPng(bytes)) throw new RouteError(502, `image generation on ${node.id} answered something that is not a PNG`);
  return { png: bytes, generationMs: Number(res.headers.get("x-generation-time")) || Math.round(performance.now() - started) };
}

/** Through the node's Ollama, for its x/ models: Ollama's OpenAI-compatible image endpoint. */
async function onOllama(registry: Registry, node: NodeRecord, req: ImageRequest, call: ServiceCall): Promise<GeneratedImage> {
  const ollama = registry.ollamaUrl(node);
  if (!ollama) throw new NodeFailure("no Ollama URL");
  const started = performance.now();
  const body = { model: req.model, prompt: req.prompt, size: `${req.width}x${req.height}`, response_format: "b64_json" };
  const { res, bytes } = await callNode(new URL("/v1/images/generations", ollama).href, { method: "POST", body: JSON.stringify(body) }, { ...call, headers: { "content-type": "application/json" }, timeoutStatus: 502 });
  if (!res.ok) throw new RouteError(502, `image generation failed on ${node.id}'s Ollama: ${errorOf(res, bytes)}`);
  let b64: unknown;
  try {
    b64 = (JSON.parse(new TextDecoder().decode(bytes)) as { data?: { b64_json?: unknown }[] }).data?.[0]?.b64_json;
  } catch {
    // handled below
  }
  const png = typeof b64 === "string" ? Uint8Array.from(Buffer.from(b64, "base64")) : new Uint8Array();
  if (!isPng(png)) throw new RouteError(502, `${node.id}'s Ollama answered without a PNG image`);
  return { png, generationMs: Math.round(performance.now() - started) };
}

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length > PNG_SIGNATURE.length && PNG_SIGNATURE.every((b, i) => bytes[i] === b);
}
