// The native embedding servers a node declares (herd does not run them): each heartbeat the agent
// asks each one what it serves and reports it in seed 000's fields. The text server (fastembed) is
// asked GET /health and serves the models the config names. The vision server is Ollama Herd's
// (node/embedding_server.py of ollama-herd at 32cfc92), which has no health route: GET /models
// lists its models, {name, dimensions, downloaded, …}, and the agent reports those the config
// names. A server that does not answer is reported as not running, so the router stops sending it
// requests (text models go back to Ollama; vision models get a 503).
import { visionModelName } from "../backends/embedding.ts";
import { callNode } from "../backends/node-service.ts";
import type { NodeEntry } from "../config/schema.ts";
import type { Heartbeat } from "../fleet/heartbeat.ts";

type EmbeddingSection = NonNullable<NodeEntry["embedding"]>;
type Server = NonNullable<EmbeddingSection["text"]>;
type Model = { name: string; dimensions?: number; cached?: boolean };

export type EmbeddingReport = Pick<
  Heartbeat,
  "text_embedding" | "text_embedding_port" | "text_embedding_status" | "vision_embedding" | "vision_embedding_port" | "vision_embedding_status"
>;

/** The most models a vision server's list is read for (Ollama Herd's has three). */
const MAX_MODELS = 64;

async function answers(port: number, timeoutMs: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(timeoutMs) })).ok;
  } catch {
    return false;
  }
}

/** The text server's models (the config's) while it answers its health route; null when it does not. */
async function textModels(server: Server, timeoutMs: number): Promise<Model[] | null> {
  return (await answers(server.port, timeoutMs)) ? server.models.map((name) => ({ name })) : null;
}

/** The vision server's models the config names, as its GET /models lists them; null when it does not answer with a list. */
async function visionModels(server: Server, timeoutMs: number): Promise<Model[] | null> {
  const wanted = new Set(server.models.map(visionModelName));
  try {
    const { res, bytes } = await callNode(`http://127.0.0.1:${server.port}/models`, { method: "GET" }, { timeoutMs, signal: new AbortController().signal, timeoutStatus: 504 });
    const listed = res.ok ? (JSON.parse(new TextDecoder().decode(bytes)) as { models?: unknown }).models : null;
    if (!Array.isArray(listed)) return null;
    return listed.slice(0, MAX_MODELS).flatMap((m: { name?: unknown; dimensions?: unknown; downloaded?: unknown } | null): Model[] => {
      if (typeof m?.name !== "string" || !wanted.has(m.name)) return [];
      const dimensions = Number.isInteger(m.dimensions) && (m.dimensions as number) > 0 ? (m.dimensions as number) : undefined;
      return [{ name: m.name, ...(dimensions ? { dimensions } : {}), cached: m.downloaded === true }];
    });
  } catch {
    return null;
  }
}

/** What a server's three heartbeat fields say: its models and port while it runs, nulls when it does not. */
function describe(server: Server, models: Model[] | null) {
  return {
    models: models ? { models_available: models, processing: false } : null,
    port: models ? server.port : null,
    status: { backend_available: models !== null, cached_model_count: models ? models.filter((m) => m.cached !== false).length : 0 },
  };
}

/** The fields for the servers the node declares; an undeclared kind is left out (the machine's collector may know it). */
export async function embeddingReport(section: EmbeddingSection | undefined, timeoutMs: number): Promise<EmbeddingReport> {
  const [text, vision] = await Promise.all([
    section?.text && textModels(section.text, timeoutMs).then((models) => describe(section.text!, models)),
    section?.vision && visionModels(section.vision, timeoutMs).then((models) => describe(section.vision!, models)),
  ]);
  return {
    ...(text ? { text_embedding: text.models, text_embedding_port: text.port, text_embedding_status: text.status } : {}),
    ...(vision ? { vision_embedding: vision.models, vision_embedding_port: vision.port, vision_embedding_status: vision.status } : {}),
  };
}
