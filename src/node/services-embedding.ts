// The native embedding servers a node declares (herd does not run them): each heartbeat the agent
// asks each one whether it runs and reports it in seed 000's fields. The text server (fastembed) is
// asked GET /health. The vision server is Ollama Herd's (node/embedding_server.py of ollama-herd at
// 32cfc92), which has no health route: GET /models lists its models, {name, dimensions, downloaded, …}.
// A server that does not answer is reported as not running, so the router stops sending it requests
// (text models go back to Ollama; vision models get a 503). Each model's dimensions and whether its
// weights are on disk come from the agent's own look (embedding-weights.ts), running or not, and from
// the vision server's list where it gives them: weights cached with no server running is what the
// backend-missing checks report.
import { visionModelName } from "../fleet/vision-models.ts";
import { callNode } from "../backends/node-service.ts";
import type { NodeEntry } from "../config/schema.ts";
import type { Heartbeat } from "../fleet/heartbeat.ts";
import { type EmbeddingKind, type EmbeddingModel, embeddingModel } from "./embedding-weights.ts";

type EmbeddingSection = NonNullable<NodeEntry["embedding"]>;
type Server = NonNullable<EmbeddingSection["text"]>;

export type EmbeddingReport = Pick<
  Heartbeat,
  "text_embedding" | "text_embedding_port" | "text_embedding_status" | "vision_embedding" | "vision_embedding_port" | "vision_embedding_status"
>;

/** The most models a vision server's list is read for (Ollama Herd's has three). */
const MAX_MODELS = 64;
/** A list of a few models is a few KB: more is no answer of the vision server's. */
const MODEL_LIST_CAP = { bytes: 1024 * 1024, setting: "the vision server's GET /models, 1 MB" };

/** Whether the text server answers its health route. */
async function textRuns(server: Server, timeoutMs: number): Promise<Map<string, Partial<EmbeddingModel>> | null> {
  try {
    return (await fetch(`http://127.0.0.1:${server.port}/health`, { signal: AbortSignal.timeout(timeoutMs) })).ok ? new Map() : null;
  } catch {
    return null;
  }
}

/** What the vision server's GET /models says of the models the config names, by name; null when it does not answer with a list. */
async function visionRuns(server: Server, timeoutMs: number): Promise<Map<string, Partial<EmbeddingModel>> | null> {
  const wanted = new Set(server.models.map(visionModelName));
  try {
    const { res, bytes } = await callNode(`http://127.0.0.1:${server.port}/models`, { method: "GET" }, { timeoutMs, maxAnswer: MODEL_LIST_CAP, signal: new AbortController().signal, timeoutStatus: 504 });
    const listed = res.ok ? (JSON.parse(new TextDecoder().decode(bytes)) as { models?: unknown }).models : null;
    if (!Array.isArray(listed)) return null;
    const said = new Map<string, Partial<EmbeddingModel>>();
    for (const m of listed.slice(0, MAX_MODELS) as ({ name?: unknown; dimensions?: unknown; downloaded?: unknown } | null)[]) {
      if (typeof m?.name !== "string" || !wanted.has(m.name)) continue;
      const dimensions = Number.isInteger(m.dimensions) && (m.dimensions as number) > 0 ? (m.dimensions as number) : undefined;
      said.set(m.name, { ...(dimensions ? { dimensions } : {}), ...(typeof m.downloaded === "boolean" ? { cached: m.downloaded } : {}) });
    }
    return said;
  } catch {
    return null;
  }
}

/** What a server's three heartbeat fields say: its models and port while it runs, nulls when it does not; its weights on disk either way. */
async function describe(kind: EmbeddingKind, server: Server, timeoutMs: number) {
  const [running, looked] = await Promise.all([(kind === "text" ? textRuns : visionRuns)(server, timeoutMs), Promise.all(server.models.map((name) => embeddingModel(kind, name)))]);
  return {
    models: running ? { models_available: served(kind, looked, running), processing: false } : null,
    port: running ? server.port : null,
    // Weights on disk, running or not: the vision server's own word where it lists the model.
    status: { backend_available: running !== null, cached_model_count: looked.filter((m) => (running && said(kind, m, running)?.cached) ?? m.cached).length },
  };
}

/** What the server says of a model the config names; the text server says nothing but that it runs. */
function said(kind: EmbeddingKind, m: EmbeddingModel, running: Map<string, Partial<EmbeddingModel>>): Partial<EmbeddingModel> | undefined {
  return kind === "vision" ? running.get(visionModelName(m.name)) : {};
}

/**
 * The models a running server serves, as the router asks for them: the text server the config's; the vision server
 * those of the config's it lists, under its own names (clip is its clip-vit-b32), its word over the agent's look.
 */
function served(kind: EmbeddingKind, looked: EmbeddingModel[], running: Map<string, Partial<EmbeddingModel>>): EmbeddingModel[] {
  if (kind === "text") return looked;
  return looked.flatMap((m) => {
    const word = said(kind, m, running);
    return word ? [{ ...m, name: visionModelName(m.name), ...word }] : [];
  });
}

/** The fields for the servers the node declares; an undeclared kind is left out (the machine's collector may know it). */
export async function embeddingReport(section: EmbeddingSection | undefined, timeoutMs: number): Promise<EmbeddingReport> {
  const [text, vision] = await Promise.all([section?.text && describe("text", section.text, timeoutMs), section?.vision && describe("vision", section.vision, timeoutMs)]);
  return {
    ...(text ? { text_embedding: text.models, text_embedding_port: text.port, text_embedding_status: text.status } : {}),
    ...(vision ? { vision_embedding: vision.models, vision_embedding_port: vision.port, vision_embedding_status: vision.status } : {}),
  };
}
