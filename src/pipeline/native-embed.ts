// An embedding request a node's native server answers (seed 000's dispatch table, backends/embedding.ts):
// through the pipeline of node services, answered in the surface's own encoding as an Ollama node's
// answer would be. null when the model is Ollama's: the surface routes it as any other request.
import { type Embeddings, embeddingKind, nativeEmbeddingJob } from "../backends/embedding.ts";
import type { Encoder } from "../core/encoder.ts";
import type { NativeEmbedRequest } from "../core/media-request.ts";
import type { Chunk } from "../core/events.ts";
import type { RouteMeta } from "./admit.ts";
import type { Pipeline } from "./route.ts";
import { runService } from "./service.ts";

export function nativeEmbed(rt: Pipeline, req: NativeEmbedRequest, meta: RouteMeta, encoder: Encoder): Promise<Response> | null {
  const kind = embeddingKind(rt.registry, req.model);
  if (!kind) return null;
  return runService(rt, req, meta, () => nativeEmbeddingJob(rt.registry, rt.queues, rt.live.config, kind, req), {
    answer: (json, headers) =>
      new Response(encoder.encode(embedded(json, req.legacy)), { headers: { "content-type": encoder.contentType, ...headers } }),
    error: encoder.error,
  });
}

/** The answer as an Ollama node's would be: its events, and its bytes (one `embedding` for the legacy route). */
function embedded(json: Embeddings, legacy: boolean): Chunk {
  return {
    raw: JSON.stringify(legacy ? { embedding: json.embeddings[0] ?? [] } : json),
    model: json.model,
    events: [
      { type: "embeddings", vectors: json.embeddings },
      { type: "usage", promptTokens: json.prompt_eval_count, totalNs: json.total_duration, loadNs: json.load_duration },
    ],
  };
}
