// The native embedding servers a node declares (herd does not run them: fastembed for text, an
// ONNX server for vision): each heartbeat the agent asks each one's GET /health and reports it in
// seed 000's fields. A server that does not answer is reported as not running, so the router stops
// sending it requests (text models go back to Ollama; vision models get a 503). Each model's
// dimensions and whether its weights are on disk come from the agent's own look (embedding-weights.ts),
// running or not: weights cached with no server running is what the backend-missing checks report.
import type { NodeEntry } from "../config/schema.ts";
import type { Heartbeat } from "../fleet/heartbeat.ts";
import { type EmbeddingKind, embeddingModel } from "./embedding-weights.ts";

type EmbeddingSection = NonNullable<NodeEntry["embedding"]>;
type Server = NonNullable<EmbeddingSection["text"]>;

export type EmbeddingReport = Pick<
  Heartbeat,
  "text_embedding" | "text_embedding_port" | "text_embedding_status" | "vision_embedding" | "vision_embedding_port" | "vision_embedding_status"
>;

async function answers(port: number, timeoutMs: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(timeoutMs) })).ok;
  } catch {
    return false;
  }
}

/** What a server's three heartbeat fields say: its models and port while it runs, nulls when it does not; its weights on disk either way. */
async function describe(kind: EmbeddingKind, server: Server, timeoutMs: number) {
  const [running, models] = await Promise.all([answers(server.port, timeoutMs), Promise.all(server.models.map((name) => embeddingModel(kind, name)))]);
  return {
    models: running ? { models_available: models, processing: false } : null,
    port: running ? server.port : null,
    status: { backend_available: running, cached_model_count: models.filter((m) => m.cached).length },
  };
}

/** The fields for the servers the node declares; an undeclared kind is left out (the machine's collector may know it). */
export async function embeddingReport(section: EmbeddingSection | undefined, timeoutMs: number): Promise<EmbeddingReport> {
  const [text, vision] = await Promise.all([section?.text && describe("text", section.text, timeoutMs), section?.vision && describe("vision", section.vision, timeoutMs)]);
  return {
    ...(text ? { text_embedding: text.models, text_embedding_port: text.port, text_embedding_status: text.status } : {}),
    ...(vision ? { vision_embedding: vision.models, vision_embedding_port: vision.port, vision_embedding_status: vision.status } : {}),
  };
}
