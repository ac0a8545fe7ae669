// The OpenAI-compatible routes (/v1/*) of a simulated Ollama node, shaped as
// Ollama's OpenAI layer translates them: Go bytes, its ids and its usage.
import { servesImages } from "../fleet/ollama-releases.ts";
import { goJson } from "./encoding.ts";
import { OllamaError, goLine, json, readBody, str, text } from "./ollama-http.ts";
import { encodePng } from "./png.ts";
import { namedModel, releasing, startRun, type OllamaNode, type Run } from "./ollama-run.ts";
import { parseMessages, parseTools, type JsonSchema, type Reply } from "./replies.ts";
import { silentTokens, type Frame, type RequestContext } from "./server.ts";

/** What every chunk (and the whole completion) starts with. */
interface Head {
  id: string;
  object: string;
  created: number;
  model: string;
  system_fingerprint: string;
}

export async function chatCompletions(node: OllamaNode, req: Request, ctx: RequestContext): Promise<Response> {
  const body = await readBody(req, "ChatCompletionRequest");
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new OllamaError(400, "[] is too short - 'messages'");
  }
  const model = str(body.model);
  const spec = namedModel(node, model);
  const messages = parseMessages(body.messages);
  const tools = parseTools(body.tools);
  const format = responseFormat(body.response_format);
  const run = await startRun(node, { spec, model, verb: "chat", body: nativeFields(body), messages, tools, format }, ctx);
  const id = `chatcmpl-${Math.floor(Math.random() * 999)}`;
  const head = { id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model, system_fingerprint: "fp_ollama" };
  const stream = body.stream === true;
  const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const frames = stream ? chunks(run, head, includeUsage) : completion(run, head);
  return ctx.stream(releasing(node, run, frames), { "Content-Type": stream ? "text/event-stream" : "application/json" });
}

/** How long the sim takes to draw an image, and the most pixels a side it draws (a bound, not Ollama's). */
const DRAW_MS = 200;
const MAX_SIDE = 2048;

/**
 * POST /v1/images/generations, from 0.14.3 until 0.32.6 removed it (commit 4713800b0): an x/ model draws a PNG of the
 * size asked ("WxH", else its 1024 a side), answered as {created, data: [{b64_json}]}; any other model draws nothing,
 * data null (openai/openai.go ToImageGenerationResponse, v0.32.5).
 */
export async function imageGenerations(node: OllamaNode, req: Request, ctx: RequestContext): Promise<Response> {
  if (!servesImages(node.version)) return text("404 page not found", 404);
  const body = await readBody(req, "ImageGenerationRequest");
  const spec = namedModel(node, str(body.model));
  const created = Math.floor(Date.now() / 1000);
  if (!spec.name.startsWith("x/")) return json({ created, data: null });
  const [w, h] = (/^(\d+)x(\d+)$/.exec(str(body.size)) ?? [, "1024", "1024"]).slice(1).map((n) => Math.min(Math.max(1, Number(n)), MAX_SIDE));
  await ctx.sleep(DRAW_MS);
  const png = encodePng(w!, h!, (x, y) => [x % 256, y % 256, 128]);
  return json({ created, data: [{ b64_json: Buffer.from(png).toString("base64") }] });
}

export async function models(node: OllamaNode): Promise<Response> {
  const data = node.disk
    .newestFirst()
    .map(({ spec, modifiedAt }) => ({ id: spec.name, object: "model", created: Math.floor(modifiedAt / 1000), owned_by: "library" }));
  // Go marshals an empty (nil) slice as null.
  return new Response(goLine({ object: "list", data: data.length ? data : null }), { headers: { "Content-Type": "application/json" } });
}

// Ollama's OpenAI layer wraps errors; its encoder ends the body with "\n".
export function openaiError(status: number, message: string): Response {
  const type = status === 400 ? "invalid_request_error" : status === 404 ? "not_found_error" : "api_error";
  const body = goLine({ error: { message, type, param: null, code: null } });
  return new Response(body, { status, headers: { "Content-Type": "application/json" } });
}

// stream: true — a chunk per token, the finish chunk, usage if asked for, [DONE].
async function* chunks(run: Run, head: Head, includeUsage: boolean): AsyncGenerator<Frame> {
  const r = run.reply;
  const call = toolCalls(r);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "", ...delta }, finish_reason: finish }] });
  for (const t of r.thinking) yield { token: true, data: chunk({ reasoning: t }) };
  for (const t of r.content) yield { token: true, data: chunk({ content: t }) };
  yield* silentTokens(r.callTokens);
  if (call) yield { data: chunk({ tool_calls: call }) };
  yield { tail: true, data: chunk({}, finishReason(r)) };
  if (includeUsage) yield { tail: true, data: sse({ ...head, choices: [], usage: usage(run) }) };
  yield { tail: true, data: "data: [DONE]\n\n" };
}

// stream: false — the tokens take their time, then one chat.completion object.
async function* completion(run: Run, head: Head): AsyncGenerator<Frame> {
  const r = run.reply;
  yield* silentTokens(r.thinking.length + r.content.length + r.callTokens);
  const message = { role: "assistant", content: r.content.join(""), reasoning: r.thinking.join("") || undefined, tool_calls: toolCalls(r) };
  const whole = { ...head, object: "chat.completion", created: Math.floor(Date.now() / 1000) };
  yield { tail: true, data: goLine({ ...whole, choices: [{ index: 0, message, finish_reason: finishReason(r) }], usage: usage(run) }) };
}

// The native fields Ollama translates a chat completion into: it reads max_tokens only.
function nativeFields(body: Record<string, unknown>): Record<string, unknown> {
  const effort = str(body.reasoning_effort) || str((body.reasoning as { effort?: unknown } | undefined)?.effort);
  return { options: { num_predict: body.max_tokens }, think: effort ? effort !== "none" : undefined };
}

function responseFormat(value: unknown): unknown {
  const rf = value as { type?: string; json_schema?: { schema?: JsonSchema } } | undefined;
  if (rf?.type === "json_object") return "json";
  if (rf?.type === "json_schema") return rf.json_schema?.schema ?? "json";
  return undefined;
}

// OpenAI carries a call's arguments as a JSON string.
function toolCalls({ toolCall: call }: Reply) {
  return call && [{ id: call.id, index: 0, type: "function", function: { name: call.name, arguments: goJson(call.arguments) } }];
}

function finishReason(r: Reply): string {
  return r.toolCall ? "tool_calls" : r.truncated ? "length" : "stop";
}

function usage({ promptTokens, reply }: Run) {
  return { prompt_tokens: promptTokens, completion_tokens: reply.evalCount, total_tokens: promptTokens + reply.evalCount };
}

const sse = (value: unknown) => `data: ${goJson(value)}\n\n`;
