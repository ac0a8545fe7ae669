// Embeddings beside Ollama, by model name (seed 000's dispatch table): vision models go to a
// node's native vision embedding server; a text model a node's native text server serves goes
// there while it runs (it never takes an Ollama inference slot); everything else stays on Ollama.
// The native servers speak Ollama's POST /api/embed, so every surface answers as it does for Ollama.
import type { Caller } from "../auth/caller.ts";
import type { OllamaChunk } from "./ollama.ts";
import { sameModel } from "../fleet/model-name.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import type { Encoder } from "../router/route.ts";
import type { Runtime } from "../runtime.ts";
import { asCaller, Busy, errorHeaders, errorOf, firstAnswer, postToNode, ServiceError, serviceHeaders, serviceNodes, tracedService, Unreachable } from "./node-service.ts";

/** Vision embedding models (DINOv2, CLIP, SigLIP): a native vision server or nothing, never Ollama. */
const VISION_EMBEDDING_MODELS = ["dinov2-vit-s14", "clip", "siglip"];
/** Where seed 000's agents run the vision server; they do not report its port. */
const DEFAULT_VISION_PORT = 11438;
/** Seed 000's advice with its 504: the first request may download the model. */
const RETRY_AFTER_S = 30;

type Kind = "native" | "vision";

/** The native server of `kind` a node runs, if it reports one running. */
function serverOn(node: NodeRecord, kind: Kind): { port: number; models: string[] } | null {
  const r = node.report;
  const server = kind === "native" ? r.text_embedding : r.vision_embedding;
  const port = kind === "native" ? r.text_embedding_port : (r.vision_embedding_port ?? (r.vision_embedding ? DEFAULT_VISION_PORT : null));
  return server && port ? { port, models: server.models_available.map((m) => m.name) } : null;
}

const serves = (node: NodeRecord, kind: Kind, model: string) => serverOn(node, kind)?.models.some((m) => sameModel(m, model)) ?? false;

/** Which native backend `model` belongs to; null: Ollama's. */
export function embeddingKind(registry: Registry, model: string): Kind | null {
  const online = registry.all().filter((n) => n.status === "online");
  if (VISION_EMBEDDING_MODELS.some((m) => sameModel(m, model)) || online.some((n) => serves(n, "vision", model))) return "vision";
  return online.some((n) => serves(n, "native", model)) ? "native" : null;
}

export interface EmbedRequest {
  model: string;
  /** The client's body, herd's own fields removed, its text(s) checked: under `input`, or `prompt` when legacy. */
  body: Record<string, unknown>;
  /** /api/embeddings: `prompt` in, one `embedding` out. */
  legacy: boolean;
  format: "ollama" | "openai";
  clientIp: string | null;
  tags: string[];
  caller: Caller | null;
  signal: AbortSignal;
}

/** Answers an embedding request from a native server, in the surface's format; null when Ollama should serve it. */
export async function nativeEmbed(rt: Runtime, req: EmbedRequest, encoder: Encoder): Promise<Response | null> {
  const kind = embeddingKind(rt.registry, req.model);
  if (!kind) return null;
  const trace = { started: performance.now(), requested: req.model, kind: "embed" as const, format: req.format, clientIp: req.clientIp, tags: req.tags, caller: req.caller };
  let answer: Awaited<ReturnType<typeof embedOn>>;
  try {
    answer = await tracedService(rt, trace, req.signal, () => asCaller(req.caller, req.model, rt.live.config.modelMap, () => embedOn(rt, kind, req)));
  } catch (e) {
    const error = e as ServiceError; // tracedService throws nothing else
    return encoder.error(error.status, error.message, errorHeaders(req.model, error));
  }
  const { json, served } = answer;
  return new Response(encoder.line({ raw: JSON.stringify(req.legacy ? { embedding: json.embeddings[0] ?? [] } : json), json }), {
    headers: { "content-type": encoder.contentType, ...serviceHeaders(req.model, served) },
  });
}

async function embedOn(rt: Runtime, kind: Kind, req: EmbedRequest) {
  const { config } = rt.live;
  const what = kind === "vision" ? "vision embedding" : "native text embedding";
  if (kind === "vision" && !config.features.visionEmbedding) throw new ServiceError(503, "vision embedding is disabled on this router (features.visionEmbedding); turn it on in the config");
  // Native servers have no queue to speak of (seed 000): no load to spread, so a fresh count each time.
  const busy = new Busy();
  const nodes = serviceNodes(rt.registry, busy, (n) => serves(n, kind, req.model));
  if (!nodes.length) {
    const port = kind === "vision" ? `port ${DEFAULT_VISION_PORT}, nodes[].embedding.vision` : "port 11439, nodes[].embedding.text";
    throw new ServiceError(503, `"${req.model}" is a ${what} model, but no online node runs a ${what} server that serves it; start one on a node (${port})`);
  }
  // The native servers speak /api/embed only.
  const { prompt, ...rest } = req.body;
  const body = JSON.stringify({ ...rest, model: req.model, input: req.legacy ? prompt : rest.input });
  const { value, node, retries } = await firstAnswer(nodes, busy, async (n) => {
    const url = rt.registry.serviceUrl(n, serverOn(n, kind)!.port);
    if (!url) throw new Unreachable(`no address for ${n.id}'s ${what} server`);
    const started = performance.now();
    const { res, bytes } = await postToNode(`${url}/api/embed`, body, {
      headers: { "content-type": "application/json" },
      timeoutMs: config.timeouts.embeddingMs,
      timeoutStatus: 504,
      signal: req.signal,
    });
    if (res.status === 404 || res.status >= 500) throw new Unreachable(`${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    if (!res.ok) throw new ServiceError(res.status, `${n.id}'s ${what} server: ${errorOf(res, bytes)}`);
    return ollamaShaped(bytes, req.model, performance.now() - started, n.id);
  }).catch((e) => {
    if (e instanceof ServiceError && e.status === 504) {
      throw new ServiceError(504, `${what} timed out: ${e.message}; the first request may download the model (about 130 MB), retry after ${RETRY_AFTER_S} s`, e.retries, RETRY_AFTER_S);
    }
    throw e;
  });
  return { json: value, served: { nodeId: node.id, model: req.model, backend: kind, retries } };
}

/** A native server's answer as Ollama's /api/embed shapes it (seed 000: "Ollama-compatible for all backends"). */
function ollamaShaped(bytes: Uint8Array, model: string, ms: number, nodeId: string): OllamaChunk & { embeddings: number[][] } {
  let answer: { embeddings?: unknown; prompt_eval_count?: unknown };
  try {
    answer = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ServiceError(502, `${nodeId}'s embedding server answered something that is not JSON`);
  }
  const vectors = answer.embeddings;
  if (!Array.isArray(vectors) || !vectors.every((e) => Array.isArray(e) && e.every((x) => typeof x === "number"))) {
    throw new ServiceError(502, `${nodeId}'s embedding server answered without "embeddings" (a list of vectors)`);
  }
  return {
    model,
    embeddings: vectors as number[][],
    total_duration: Math.round(ms * 1e6),
    load_duration: 0,
    prompt_eval_count: typeof answer.prompt_eval_count === "number" ? answer.prompt_eval_count : 0,
  };
}
