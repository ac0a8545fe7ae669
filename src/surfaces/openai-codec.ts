// OpenAI Chat Completions ⇄ Ollama /api/chat. The request keeps every field
// Ollama has a home for (tools, stop, top_p, seed, penalties, response_format,
// images); the answer keeps one id for the whole stream, maps finish reasons
// (stop / length / tool_calls) and reports usage.
import type { OllamaChunk, OllamaLine } from "../backends/ollama.ts";
import type { Encoder } from "../router/route.ts";

type Json = Record<string, unknown>;

/** Ollama's /api/chat body for an OpenAI request, or a message naming the field that is wrong. */
export function chatToOllama(body: Json): Json | string {
  if (!Array.isArray(body.messages)) return "messages: expected a list of messages";
  const messages: Json[] = [];
  for (const [i, m] of (body.messages as Json[]).entries()) {
    const converted = message(m, i);
    if (typeof converted === "string") return converted;
    messages.push(converted);
  }
  const options: Json = {};
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  for (const [from, to, value] of [
    ["temperature", "temperature", body.temperature],
    ["top_p", "top_p", body.top_p],
    ["seed", "seed", body.seed],
    ["frequency_penalty", "frequency_penalty", body.frequency_penalty],
    ["presence_penalty", "presence_penalty", body.presence_penalty],
    ["max_tokens", "num_predict", maxTokens],
  ] as const) {
    if (value === undefined || value === null) continue;
    if (typeof value !== "number") return `${from}: expected a number`;
    options[to] = value;
  }
  if (body.stop !== undefined && body.stop !== null) {
    const stop = typeof body.stop === "string" ? [body.stop] : body.stop;
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== "string")) return "stop: expected a string or a list of strings";
    options.stop = stop;
  }
  const out: Json = { messages, stream: body.stream === true, options };
  if (body.tools !== undefined && body.tool_choice !== "none") {
    if (!Array.isArray(body.tools)) return "tools: expected a list";
    out.tools = body.tools;
  }
  const format = responseFormat(body.response_format);
  if (typeof format === "string" && format !== "json") return format;
  if (format !== undefined) out.format = format;
  if (body.reasoning_effort !== undefined) out.think = body.reasoning_effort === "none" ? false : body.reasoning_effort;
  return out;
}

function message(m: Json, i: number): Json | string {
  const at = `messages[${i}]`;
  if (!m || typeof m !== "object" || typeof m.role !== "string") return `${at}.role: expected a string`;
  const out: Json = { role: m.role === "developer" ? "system" : m.role, content: "" };
  if (typeof m.content === "string") out.content = m.content;
  else if (Array.isArray(m.content)) {
    const texts: string[] = [];
    const images: string[] = [];
    for (const [j, part] of (m.content as Json[]).entries()) {
      if (part?.type === "text" && typeof part.text === "string") texts.push(part.text);
      else if (part?.type === "image_url") {
        const url = (part.image_url as Json | undefined)?.url;
        const data = typeof url === "string" ? /^data:[^;,]+;base64,(.*)$/s.exec(url)?.[1] : undefined;
        if (!data) return `${at}.content[${j}].image_url.url: expected a data: URL with base64 image data (herd does not fetch remote images)`;
        images.push(data);
      } else return `${at}.content[${j}].type: expected "text" or "image_url"`;
    }
    out.content = texts.join("\n");
    if (images.length) out.images = images;
  } else if (m.content !== undefined && m.content !== null) return `${at}.content: expected a string or a list of parts`;
  if (Array.isArray(m.tool_calls)) {
    const calls: Json[] = [];
    for (const [j, call] of (m.tool_calls as Json[]).entries()) {
      const fn = call?.function as Json | undefined;
      if (!fn || typeof fn.name !== "string") return `${at}.tool_calls[${j}].function.name: expected a string`;
      let args: unknown = fn.arguments ?? {};
      if (typeof args === "string") {
        try {
          args = args.trim() ? JSON.parse(args) : {};
        } catch {
          return `${at}.tool_calls[${j}].function.arguments: expected a JSON object in a string`;
        }
      }
      calls.push({ ...(call.id ? { id: call.id } : {}), function: { name: fn.name, arguments: args } });
    }
    out.tool_calls = calls;
  }
  if (m.role === "tool" && typeof m.name === "string") out.tool_name = m.name;
  if (typeof m.tool_call_id === "string") out.tool_call_id = m.tool_call_id;
  return out;
}

function responseFormat(rf: unknown): unknown {
  if (rf === undefined || rf === null) return undefined;
  const type = (rf as Json).type;
  if (type === "text") return undefined;
  if (type === "json_object") return "json";
  if (type === "json_schema") {
    const schema = ((rf as Json).json_schema as Json | undefined)?.schema;
    return schema && typeof schema === "object" ? schema : "response_format.json_schema.schema: expected an object";
  }
  return `response_format.type: expected "text", "json_object" or "json_schema"`;
}

/** OpenAI's error object, with the type its SDKs map to an exception class. */
export function openaiError(status: number, message: string, headers: Record<string, string> = {}): Response {
  const type = status === 400 ? "invalid_request_error" : status === 404 ? "invalid_request_error" : status === 429 ? "rate_limit_error" : "api_error";
  const code = status === 404 ? "model_not_found" : null;
  return Response.json({ error: { message, type, param: null, code } }, { status, headers });
}

/** Writes Ollama's chat lines as OpenAI chat completions: SSE chunks, or one object. */
export function chatEncoder(stream: boolean, includeUsage: boolean): Encoder {
  const id = `chatcmpl-${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
  const created = Math.floor(Date.now() / 1000);
  let toolCalls = 0;
  let started = false;
  const base = (model: unknown) => ({ id, object: stream ? "chat.completion.chunk" : "chat.completion", created, model, system_fingerprint: "fp_herd" });
  const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;

  return {
    contentType: stream ? "text/event-stream; charset=utf-8" : "application/json",
    line({ json }: OllamaLine) {
      if (json.error) return "";
      const calls = (json.message?.tool_calls ?? []).map((c, i) => ({
        index: toolCalls + i,
        id: c.id ?? `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
        type: "function",
        function: { name: c.function.name, arguments: typeof c.function.arguments === "string" ? c.function.arguments : JSON.stringify(c.function.arguments ?? {}) },
      }));
      toolCalls += calls.length;
      if (!stream) {
        const message: Json = { role: "assistant", content: calls.length && !json.message?.content ? null : (json.message?.content ?? "") };
        if (json.message?.thinking) message.reasoning = json.message.thinking;
        if (calls.length) message.tool_calls = calls;
        return JSON.stringify({ ...base(json.model), choices: [{ index: 0, message, finish_reason: finishReason(json, toolCalls), logprobs: null }], usage: usage(json) });
      }
      let out = "";
      const delta: Json = {};
      if (!started) {
        started = true;
        delta.role = "assistant";
      }
      if (json.message?.content) delta.content = json.message.content;
      if (json.message?.thinking) delta.reasoning = json.message.thinking;
      if (calls.length) delta.tool_calls = calls;
      if (Object.keys(delta).length) out += sse({ ...base(json.model), choices: [{ index: 0, delta, finish_reason: null, logprobs: null }] });
      if (json.done) {
        out += sse({ ...base(json.model), choices: [{ index: 0, delta: {}, finish_reason: finishReason(json, toolCalls), logprobs: null }] });
        if (includeUsage) out += sse({ ...base(json.model), choices: [], usage: usage(json) });
      }
      return out;
    },
    end: () => (stream ? "data: [DONE]\n\n" : ""),
    fail: (message) => (stream ? sse({ error: { message, type: "api_error", param: null, code: null } }) : ""),
    error: openaiError,
  };
}

function finishReason(done: OllamaChunk, toolCalls: number): string {
  if (toolCalls) return "tool_calls";
  return done.done_reason === "length" ? "length" : "stop";
}

function usage(done: OllamaChunk) {
  const prompt = done.prompt_eval_count ?? 0;
  const completion = done.eval_count ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
