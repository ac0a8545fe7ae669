// The OpenAI API over the fleet: chat completions and the legacy completions
// (streamed as SSE or not), embeddings, and the fleet's models. Requests are
// decoded into the typed conversation, which each backend renders; see
// openai-codec.ts and completions-codec.ts.
import { Elysia } from "elysia";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { fleetImageModels } from "../fleet/image-models.ts";
import type { Chunk } from "../core/events.ts";
import type { Conversation } from "../core/conversation.ts";
import { needsOf } from "../core/request.ts";
import { modelsOnDisk, nativeEmbeddingModels } from "../fleet/catalog.ts";
import { modelKey, sameModel } from "../fleet/model-name.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { nativeEmbed } from "../pipeline/native-embed.ts";
import { sessionOf } from "../core/session.ts";
import { estimatePrompt } from "../core/tokens.ts";
import type { Encoder } from "../core/encoder.ts";
import { type Pipeline, route } from "../pipeline/route.ts";
import { modelInPath, modelOf, readJsonObject, refusedHeaders } from "./body.ts";
import { dimensionsOf, TEXTS_EXPECTED, textsOf } from "./embed-input.ts";
import { chatConversation, chatEncoder } from "./openai-codec.ts";
import { completionConversation, completionEncoder } from "./completions-codec.ts";
import { openaiError } from "../core/wire-errors.ts";

/** What the OpenAI surface reads: the pipeline, and when herd started (a model's `created`). */
interface OpenAiSources extends Pipeline {
  startedAt: number;
}

type Ctx = { request: Request };

/** OpenAI's API: for any client, in OpenAI's error format. */
const API: RouteFacts = { access: "client", body: "json", errors: "openai" };

export function openaiSurface(rt: OpenAiSources) {
  return new Elysia({ name: "openai" })
    .use(routeFacts)
    .post("/v1/chat/completions", ({ request }: Ctx) => chat(rt, request, clientAddressOf(request)), { parse: "none", facts: API })
    .post("/v1/completions", ({ request }: Ctx) => completions(rt, request, clientAddressOf(request)), { parse: "none", facts: API })
    .post("/v1/embeddings", ({ request }: Ctx) => embeddings(rt, request, clientAddressOf(request)), { parse: "none", facts: API })
    .get("/v1/models", () => ({ object: "list", data: models(rt) }), { facts: API })
    // A wildcard, not a segment: an MLX model's name holds a slash, which a client may or may not encode.
    .get("/v1/models/*", ({ params }) => retrieve(rt, params["*"]), { facts: API });
}

/** Chat Completions, as an Ollama chat. */
function chat(rt: OpenAiSources, request: Request, clientIp: string | null): Promise<Response> {
  return generation(rt, request, clientIp, "chat", chatConversation, (stream, includeUsage) => chatEncoder(stream, includeUsage));
}

/** The legacy Completions, as an Ollama generate. */
function completions(rt: OpenAiSources, request: Request, clientIp: string | null): Promise<Response> {
  return generation(rt, request, clientIp, "generate", completionConversation, (stream, includeUsage, body, conversation) =>
    completionEncoder(stream, includeUsage, body.echo === true ? conversation.prompt! : ""),
  );
}

/** What chat and completions share: the body read, herd's fields taken, the conversation decoded, and the request routed. */
async function generation(
  rt: OpenAiSources,
  request: Request,
  clientIp: string | null,
  kind: "chat" | "generate",
  decode: (body: Record<string, unknown>) => Conversation | string,
  encoder: (stream: boolean, includeUsage: boolean, body: Record<string, unknown>, conversation: Conversation) => Encoder,
): Promise<Response> {
  const body = await readJsonObject(request);
  const named = typeof body === "string" ? { error: body } : modelOf(body, "model: required");
  const refuse = (message: string) => openaiError(400, message, refusedHeaders(named));
  if (typeof body === "string") return refuse(body);
  if ("error" in named) return refuse(named.error);
  const { model } = named;
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return refuse(herd);
  const conversation = decode(body);
  if (typeof conversation === "string") return refuse(conversation);
  const stream = body.stream === true;
  const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  return route(
    rt,
    { ...conversation, surface: "openai", kind, path: `/api/${kind}`, model, fallbackModels: herd.fallbackModels, strict: herd.strict, needs: needsOf(conversation), promptTokens: estimatePrompt(conversation), session: sessionOf(conversation, request.headers), stream, signal: request.signal },
    encoder(stream, includeUsage, body, conversation),
    { tags: herd.tags, clientIp, caller: callerOf(request) },
  );
}

async function embeddings(rt: OpenAiSources, request: Request, clientIp: string | null): Promise<Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return openaiError(400, body);
  const named = modelOf(body, "model: required");
  if ("error" in named) return openaiError(400, named.error);
  const { model } = named;
  const input = textsOf(body.input);
  if (input === null) return openaiError(400, `input: ${body.input === undefined ? "required: the text, or list of texts, to embed" : TEXTS_EXPECTED}`);
  if (body.encoding_format !== undefined && body.encoding_format !== "float" && body.encoding_format !== "base64") {
    return openaiError(400, `encoding_format: expected "float" or "base64"`);
  }
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return openaiError(400, herd);
  // Ollama's /api/embed takes dimensions too, as a field of its own.
  const conversation: Conversation = { input, tools: [], options: {}, extra: { ...dimensionsOf(body) } };
  const encoder = embeddingEncoder(body.encoding_format === "base64");
  const meta = { tags: herd.tags, clientIp, caller: callerOf(request) };
  const embedded = nativeEmbed(rt, { surface: "openai", kind: "embed", model, input, ...dimensionsOf(body), legacy: false, signal: request.signal }, meta, encoder);
  if (embedded) return embedded;
  return route(
    rt,
    { ...conversation, surface: "openai", kind: "embed", path: "/api/embed", model, fallbackModels: herd.fallbackModels, strict: herd.strict, needs: needsOf(conversation), promptTokens: estimatePrompt(conversation), stream: false, signal: request.signal },
    encoder,
    meta,
  );
}

function embeddingEncoder(base64: boolean): Encoder {
  return {
    contentType: "application/json",
    encode({ events, model }: Chunk) {
      let vectors: number[][] = [];
      let prompt = 0;
      for (const e of events) {
        if (e.type === "embeddings") vectors = e.vectors;
        else if (e.type === "usage") prompt = e.promptTokens ?? 0;
      }
      return JSON.stringify({
        object: "list",
        data: vectors.map((v, index) => ({ object: "embedding", index, embedding: base64 ? Buffer.from(new Float32Array(v).buffer).toString("base64") : v })),
        model,
        usage: { prompt_tokens: prompt, total_tokens: prompt },
      });
    },
    end: () => "",
    fail: () => "",
    error: openaiError,
  };
}

function models(rt: OpenAiSources) {
  const created = Math.floor(rt.startedAt / 1000);
  // Image models the node agents generate with (mflux, DiffusionKit), and the embedding models of the nodes' native
  // servers, are models of the fleet too (seed 000: "LLM, image, and embedding models"); a model a native server
  // serves is listed once, as that server's, since /api/embed sends it there.
  const generators = fleetImageModels(rt.registry).filter((m) => m.backend !== "ollama");
  const natives = nativeEmbeddingModels(rt.registry, rt.live.config.features.visionEmbedding);
  const native = new Set(natives.map((m) => modelKey(m.name)));
  const rest = [...modelsOnDisk(rt.registry), ...generators].filter((m) => !native.has(modelKey(m.name)));
  return [...natives, ...rest]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((m) => ({ id: m.name, object: "model", created, owned_by: m.backend }));
}

/**
 * One model of the list (openai's models.retrieve), by any spelling of its name; its id as the client wrote it, as
 * Ollama's own answers it (middleware/openai.go RetrieveMiddleware and openai/openai.go ToModel, v0.32.15).
 */
function retrieve(rt: OpenAiSources, segment: string) {
  const named = modelInPath(segment, "GET /v1/models/{model}");
  if ("error" in named) return openaiError(400, named.error);
  const { model } = named;
  const listed = models(rt).find((m) => sameModel(m.id, model));
  return listed ? { ...listed, id: model } : openaiError(404, `model "${model}" not found on any node`);
}
