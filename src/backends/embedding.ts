// Embeddings beside Ollama, by model name (seed 000's dispatch table): vision models go to a
// node's vision embedding server; a text model a node's native text server serves goes there
// while it runs (it never takes an Ollama inference slot); everything else stays on Ollama. The
// text server speaks Ollama's POST /api/embed. The vision server is Ollama Herd's
// (node/embedding_server.py of ollama-herd at 32cfc92: its agent runs it, or the node's owner
// does): POST /embed {"model", "images": [base64…]} → {model, embeddings, dimensions}. Every
// surface answers as it does for an Ollama node, the texts of a vision request being its images.
import { type Config, nodeAnswerCap } from "../config/schema.ts";
import type { NativeEmbedRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { type EmbeddingKind, embeddingServerOn } from "../fleet/catalog.ts";
import { sameModel } from "../fleet/model-name.ts";
import { VISION_MODELS, visionModelName } from "../fleet/vision-models.ts";
import type { Queues } from "../fleet/queues.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { callNode, errorOf, type ServiceJob, serviceNodes } from "./node-service.ts";

/** Seed 000's advice with its 504: the first request may download the model. */
const RETRY_AFTER_S = 30;

const named = (kind: EmbeddingKind, model: string) => (kind === "vision" ? visionModelName(model) : model);
const servedBy = (node: NodeRecord, kind: EmbeddingKind, model: string) => embeddingServerOn(node, kind)?.models.find((m) => sameModel(m.name, named(kind, model)));

/** Which native backend `model` belongs to; null: Ollama's. */
export function embeddingKind(registry: Registry, model: string): EmbeddingKind | null {
  const online = registry.all().filter((n) => n.status === "online");
  if (visionModelName(model) in VISION_MODELS || online.some((n) => servedBy(n, "vision", model))) return "vision";
  return online.some((n) => servedBy(n, "native", model)) ? "native" : null;
}

/** An embedding answer in the shape of Ollama's /api/embed (which leaves the counts out when it embedded nothing). */
export interface Embeddings {
  model: string;
  embeddings: number[][];
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
}

/** Where `kind`'s server can embed it: the nodes whose server serves the model; a RouteError when none runs or vision embedding is off. */
export function nativeEmbeddingJob(registry: Registry, queues: Queues, config: Config, kind: EmbeddingKind, req: NativeEmbedRequest): ServiceJob<Embeddings> {
  const what = kind === "vision" ? "vision embedding" : "native text embedding";
  if (kind === "vision" && !config.features.visionEmbedding) throw new RouteError(503, "vision embedding is disabled on this router (features.visionEmbedding); turn it on in the config");
  const model = named(kind, req.model);
  const nodes = serviceNodes(registry, queues, (n) => servedBy(n, kind, model) !== undefined);
  if (!nodes.length) {
    const port = kind === "vision" ? "port 11438, nodes[].embedding.vision" : "port 11439, nodes[].embedding.text";
    throw new RouteError(503, `"${req.model}" is a ${what} model, but no online node runs a ${what} server that serves it; start one on a node (${port})`);
  }
  const inputs = typeof req.input === "string" ? (req.input ? [req.input] : []) : req.input;
  if (kind === "vision") refuseDimensions(req, model, servedBy(nodes[0]!, kind, model)?.dimensions);
  // The text server reads Ollama's body; the vision server its own, the images in base64.
  const [path, body] = kind === "vision" ? ["/embed", { model, images: inputs }] : ["/api/embed", { model, input: req.input, dimensions: req.dimensions }];
  const call = async (n: NodeRecord, signal: AbortSignal) => {
    // No text (Ollama's routes take that: a model loaded, no vectors): nothing for the server to do.
    if (inputs.length === 0) return { value: { model, embeddings: [] }, backend: kind };
    const url = registry.serviceUrl(n, embeddingServerOn(n, kind)!.port);
    if (!url) throw new NodeFailure(`no address for ${n.id}'s ${what} server`);
    const started = performance.now();
    const { res, bytes } = await callNode(`${url}${path}`, { method: "POST", body: JSON.stringify(body) }, { headers: { "content-type": "application/json" }, timeoutMs: config.timeouts.embeddingMs, maxAnswer: nodeAnswerCap(config), timeoutStatus: 504, signal }).catch((e: unknown) => {
      if (!(e instanceof RouteError) || e.status !== 504) throw e;
      const size = kind === "native" ? " (about 130 MB)" : "";
      throw new RouteError(504, `${what} timed out: ${e.message}; the first request may download the model${size}, retry after ${RETRY_AFTER_S} s`, 0, [], RETRY_AFTER_S);
    });
    if (res.status === 404 || res.status >= 500) throw new NodeFailure(`${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    if (!res.ok) throw new RouteError(res.status, `${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    return { value: ollamaShaped(bytes, model, inputs.length, performance.now() - started, n.id), backend: kind };
  };
  return { model, nodes, call };
}

/** A vision model's vectors have its own length: a client asking for another is told so rather than given what it did not ask for. */
function refuseDimensions(req: NativeEmbedRequest, model: string, dimensions: number | undefined): void {
  if (req.dimensions === undefined || req.dimensions === dimensions) return;
  throw new RouteError(400, `dimensions: the vision model ${model} gives vectors of ${dimensions ?? "its own"} dimensions and cannot shorten them; leave dimensions out`);
}

/**
 * A native server's answer as Ollama's /api/embed shapes it (seed 000: "Ollama-compatible for all backends"):
 * one vector of finite numbers per input, all of one length; else a 502.
 */
function ollamaShaped(bytes: Uint8Array, model: string, count: number, ms: number, nodeId: string): Embeddings {
  let answer: { embeddings?: unknown; prompt_eval_count?: unknown };
  try {
    answer = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new RouteError(502, `${nodeId}'s embedding server answered something that is not JSON`);
  }
  const vectors = answer.embeddings;
  const length = Array.isArray(vectors) && Array.isArray(vectors[0]) ? vectors[0].length : -1;
  const valid = (e: unknown) => Array.isArray(e) && e.length === length && e.every((x) => typeof x === "number" && Number.isFinite(x));
  if (!Array.isArray(vectors) || vectors.length !== count || !vectors.every(valid)) {
    throw new RouteError(502, `${nodeId}'s embedding server answered without "embeddings": ${count} vector(s) of numbers, all of one length`);
  }
  return {
    model,
    embeddings: vectors as number[][],
    total_duration: Math.round(ms * 1e6),
    load_duration: 0,
    prompt_eval_count: typeof answer.prompt_eval_count === "number" ? answer.prompt_eval_count : 0,
  };
}
