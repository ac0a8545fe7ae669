// The Anthropic Messages API over the fleet, for Claude Code and the Anthropic
// SDKs: POST /v1/messages (SSE or one Message), count_tokens, and the GET probe
// Claude Code may send. The model id (claude-*, or a local name) goes to the
// pipeline to resolve to a local model, fit its context and decide Ollama's
// `think` by what that model can do; the translation lives in anthropic-codec.ts.
import { Elysia } from "elysia";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { keyRefusal } from "../auth/refusal.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { presentedKey, sameSecret } from "../config/credentials/tokens.ts";
import { type InferenceRequest, needsOf, replyCapOf } from "../core/request.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { sessionOf } from "../core/session.ts";
import { type Pipeline, route } from "../pipeline/route.ts";
import { promptTokens } from "../core/tokens.ts";
import { messagesEncoder, messagesConversation } from "./anthropic-codec.ts";
import { anthropicError } from "../core/wire-errors.ts";
import { setsThink } from "./anthropic-thinking.ts";
import { modelOf, readJsonObject, refusedHeaders } from "./body.ts";

type Ctx = { request: Request };

/** Anthropic's API: for any client, in Anthropic's error format. */
const API: RouteFacts = { access: "client", body: "json", errors: "anthropic" };

export function anthropicSurface(rt: Pipeline) {
  return new Elysia({ name: "anthropic" })
    .use(routeFacts)
    .post("/v1/messages", async ({ request }: Ctx) => echoVersion(request, await messages(rt, request, clientAddressOf(request))), { parse: "none", facts: API })
    .post("/v1/messages/count_tokens", async ({ request }: Ctx) => echoVersion(request, await countTokens(rt, request)), { parse: "none", facts: API })
    .get("/v1/messages", ({ request }: Ctx) => echoVersion(request, Response.json({ ok: true, service: "ollama-herd", endpoint: "/v1/messages", ts: Math.floor(Date.now() / 1000) })), { facts: API });
}

// x-api-key as Anthropic's SDKs send it, or a bearer token; compared in constant time.
function keyMatches(request: Request, key: string | null): boolean {
  const given = presentedKey(request);
  return given !== null && key !== null && sameSecret(given, key);
}

// Whatever the date: current SDKs send versions newer than 2023-06-01, and herd speaks one dialect.
function echoVersion(request: Request, response: Response): Response {
  const version = request.headers.get("anthropic-version");
  if (version) response.headers.set("anthropic-version", version);
  return response;
}

async function messages(rt: Pipeline, request: Request, clientIp: string | null): Promise<Response> {
  const { anthropic, timeouts } = rt.live.config;
  const body = await readJsonObject(request);
  const named = typeof body === "string" ? { error: body } : modelOf(body, "model: required");
  const refuse = (status: number, message: string) => anthropicError(status, message, refusedHeaders(named));
  if (anthropic.apiKey && !keyMatches(request, anthropic.apiKey.value)) return refuse(401, "invalid x-api-key: this router requires the key set in anthropic.apiKey");
  if (typeof body === "string") return refuse(400, body);
  if ("error" in named) return refuse(400, named.error);
  const requested = named.model;
  if (body.stream !== undefined && typeof body.stream !== "boolean") return refuse(400, "stream: expected true or false");
  const userId = (body.metadata as { user_id?: unknown } | undefined)?.user_id;
  if (userId !== undefined && userId !== null && typeof userId !== "string") return refuse(400, "metadata.user_id: expected a string");
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return refuse(400, herd);
  const translated = messagesConversation(body, anthropic.defaultMaxTokens);
  if (typeof translated === "string") return refuse(400, translated);

  const { conversation } = translated;
  const stream = body.stream === true;
  const req: InferenceRequest = {
    ...conversation,
    surface: "anthropic",
    kind: "chat",
    path: "/api/chat",
    model: requested,
    resolve: true,
    // Old tool results go first when the conversation outgrows the model's context (pipeline/context-fit.ts).
    fitContext: { replyTokens: replyCapOf(conversation) ?? anthropic.defaultMaxTokens },
    // Only "enabled" and "disabled" set think, and only on a model that can take it.
    thinkAsk: setsThink(translated.thinking) ? { think: translated.thinking.type === "enabled" } : undefined,
    fallbackModels: herd.fallbackModels,
    strict: herd.strict,
    needs: needsOf(conversation),
    promptTokens: await promptTokens(conversation),
    session: sessionOf(conversation, request.headers),
    stream,
    signal: request.signal,
  };
  return route(
    rt,
    req,
    // Pings well inside the window in which herd itself waits on a silent node; input_tokens once the pipeline has fitted the prompt.
    messagesEncoder(stream, { model: requested, inputTokens: () => req.promptTokens, stops: translated.stops, omitThinking: translated.thinking.omitted, pingEveryMs: Math.min(10_000, timeouts.idleMs / 4) }),
    { tags: userId ? [...herd.tags, `user:${userOf(userId)}`] : herd.tags, clientIp, caller: callerOf(request) },
  );
}

// Claude Code sends user_id as JSON text whose session_id changes every session: the user is its account, else its device.
function userOf(userId: string): string {
  try {
    const { account_uuid, device_id } = JSON.parse(userId) ?? {};
    const who = account_uuid || device_id;
    if (typeof who === "string") return who;
  } catch {}
  return userId;
}

// Counting a prompt is work done for the key (a prompt may be megabytes): it takes from the key's per-minute budget.
async function countTokens(rt: Pipeline, request: Request): Promise<Response> {
  const over = callerOf(request)?.take();
  if (over) return keyRefusal("anthropic", over);
  const body = await readJsonObject(request);
  if (typeof body === "string") return anthropicError(400, body);
  const translated = messagesConversation(body, rt.live.config.anthropic.defaultMaxTokens);
  if (typeof translated === "string") return anthropicError(400, translated);
  return Response.json({ input_tokens: await promptTokens(translated.conversation) });
}
