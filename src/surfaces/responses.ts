// The OpenAI Responses API over the fleet: what Codex speaks. Stateless: each
// request carries the whole conversation (Codex's default, store=false),
// decoded into the typed conversation; the pipeline resolves the model id
// (gpt-5-codex → the best loaded coder; an image asks for a vision model) and
// routes it like any other; see responses-codec.ts and docs/responses.md.
import { Elysia } from "elysia";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { routeFacts } from "../auth/route-facts.ts";
import { needsOf } from "../core/request.ts";
import { log } from "../log.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { sessionOf } from "../core/session.ts";
import { estimatePrompt } from "../core/tokens.ts";
import { type Pipeline, route } from "../pipeline/route.ts";
import { modelOf, readJsonObject, refusedHeaders } from "./body.ts";
import { openaiError } from "../core/wire-errors.ts";
import { conversationOf, readResponsesRequest, responsesEncoder } from "./responses-codec.ts";

type Ctx = { request: Request };

// Codex resends its whole history every turn: one warning per item type is enough.
const warned = new Set<string>();

export function responsesSurface(rt: Pipeline) {
  return new Elysia({ name: "responses" }).use(routeFacts).post("/v1/responses", ({ request }: Ctx) => create(rt, request, clientAddressOf(request)), {
    parse: "none",
    facts: { access: "client", body: "json", errors: "openai" },
  });
}

async function create(rt: Pipeline, request: Request, clientIp: string | null): Promise<Response> {
  const body = await readJsonObject(request);
  const named = typeof body === "string" ? { error: body } : modelOf(body, "model: required");
  const refuse = (message: string) => openaiError(400, message, refusedHeaders(named));
  if (typeof body === "string") return refuse(body);
  if ("error" in named) return refuse(named.error);
  const requested = named.model;
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    return refuse("previous_response_id: herd keeps no conversation state; resend the whole conversation in `input` (Codex does by default, with store=false)");
  }
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return refuse(herd);
  const translated = readResponsesRequest(body);
  if (typeof translated === "string") return refuse(translated);
  for (const what of translated.dropped) {
    if (warned.has(what)) continue;
    warned.add(what);
    log.warn(`/v1/responses: dropped ${what}: herd does not translate them (said once per type)`);
  }
  const stream = body.stream === true;
  const conversation = conversationOf(translated);
  return route(
    rt,
    {
      ...conversation,
      surface: "responses",
      kind: "chat",
      path: "/api/chat",
      model: requested,
      resolve: true,
      // A reasoning effort is a `think` only some models take: decided for the model it resolves to.
      thinkAsk: translated.effort ? { effort: translated.effort } : undefined,
      fallbackModels: herd.fallbackModels,
      strict: herd.strict,
      needs: needsOf(translated),
      promptTokens: estimatePrompt(conversation),
      session: sessionOf(conversation, request.headers),
      stream,
      signal: request.signal,
    },
    responsesEncoder(stream, translated, log.warn),
    { tags: herd.tags, clientIp, caller: callerOf(request) },
  );
}
