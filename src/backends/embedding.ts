// Embeddings beside Ollama, by model name (seed 000's dispatch table): vision models go to a
// node's native vision embedding server; a text model a node's native text server serves goes
// there while it runs (it never takes an Ollama inference slot); everything else stays on Ollama.
// The native servers speak Ollama's POST /api/embed, so every surface answers as it does for Ollama.
import { type Config, nodeAnswerCap } from "../config/schema.ts";
import type { NativeEmbedRequest } from "../core/media-request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { sameModel } from "../fleet/model-name.ts";
import type { Queues } from "../fleet/queues.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { errorOf, postToNode, type ServiceJob, serviceNodes } from "./node-service.ts";

/** Vision embedding models (DINOv2, CLIP, SigLIP): a native vision server or nothing, never Ollama. */
const VISION_EMBEDDING_MODELS = ["dinov2-vit-s14", "clip", "siglip"];
/** Where seed 000's agents run the vision server; they do not report its port. */
const DEFAULT_VISION_PORT = 11438;
/** Seed 000's advice with its 504: the first request may download the model. */
const RETRY_AFTER_S = 30;

export type EmbeddingKind = "native" | "vision";

/** The native server of `kind` a node runs, if it reports one running. */
function serverOn(node: NodeRecord, kind: EmbeddingKind): { port: number; models: string[] } | null {
  const r = node.report;
  const server = kind === "native" ? r.text_embedding : r.vision_embedding;
  const port = kind === "native" ? r.text_embedding_port : (r.vision_embedding_port ?? (r.vision_embedding ? DEFAULT_VISION_PORT : null));
  return server && port ? { port, models: server.models_available.map((m) => m.name) } : null;
}

const serves = (node: NodeRecord, kind: EmbeddingKind, model: string) => serverOn(node, kind)?.models.some((m) => sameModel(m, model)) ?? false;

/** Which native backend `model` belongs to; null: Ollama's. */
export function embeddingKind(registry: Registry, model: string): EmbeddingKind | null {
  const online = registry.all().filter((n) => n.status === "online");
  if (VISION_EMBEDDING_MODELS.some((m) => sameModel(m, model)) || online.some((n) => serves(n, "vision", model))) return "vision";
  return online.some((n) => serves(n, "native", model)) ? "native" : null;
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
  const nodes = serviceNodes(registry, queues, (n) => serves(n, kind, req.model));
  if (!nodes.length) {
    const port = kind === "vision" ? `port ${DEFAULT_VISION_PORT}, nodes[].embedding.vision` : "port 11439, nodes[].embedding.text";
    throw new RouteError(503, `"${req.model}" is a ${what} model, but no online node runs a ${what} server that serves it; start one on a node (${port})`);
  }
  // The native servers speak /api/embed only.
  const body = JSON.stringify({ model: req.model, input: req.input, dimensions: req.dimensions });
  const call = async (n: NodeRecord, signal: AbortSignal) => {
    // No text (Ollama's routes take that: a model loaded, no vectors): nothing for the server to do.
    if (req.input.length === 0) return { value: { model: req.model, embeddings: [] }, backend: kind };
    const url = registry.serviceUrl(n, serverOn(n, kind)!.port);
    if (!url) throw new NodeFailure(`no address for ${n.id}'s ${what} server`);
    const started = performance.now();
    const { res, bytes } = await postToNode(`${url}/api/embed`, body, { headers: { "content-type": "application/json" }, timeoutMs: config.timeouts.embeddingMs, maxAnswer: nodeAnswerCap(config), timeoutStatus: 504, signal }).catch((e) => {
      if (!(e instanceof RouteError) || e.status !== 504) throw e;
      throw new RouteError(504, `${what} timed out: ${e.message}; the first request may download the model (about 130 MB), retry after ${RETRY_AFTER_S} s`, 0, [], RETRY_AFTER_S);
    });
    if (res.status === 404 || res.status >= 500) throw new NodeFailure(`${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    if (!res.ok) throw new RouteError(res.status, `${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    return { value: ollamaShaped(bytes, req.model, performance.now() - started, n.id), backend: kind };
  };
  return { model: req.model, nodes, call };
}

/** A native server's answer as Ollama's /api/embed shapes it (seed 000: "Ollama-compatible for all backends"). */
function ollamaShaped(bytes: Uint8Array, model: string, ms: number, nodeId: string): Embeddings {
  let answer: { embeddings?: unknown; prompt_eval_count?: unknown };
  try {
    answer = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new RouteError(502, `${nodeId}'s embedding server answered something that is not JSON`);
  }
  const vectors = answer.embeddings;
  if (!Array.isArray(vectors) || !vectors.every((e) => Array.isArray(e) && e.every((x) => typeof x === "number"))) {
    throw new RouteError(502, `${nodeId}'s embedding server answered without "embeddings" (a list of vectors)`);
  }
  return {
    model,
    embeddings: vectors as number[][],
    total_duration: Math.round(ms * 1e6),
    load_duration: 0,
    prompt_eval_count: typeof answer.prompt_eval_count === "number" ? answer.prompt_eval_count : 0,
  };
}
