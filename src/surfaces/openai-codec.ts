// OpenAI Chat Completions ⇄ the typed conversation. The request keeps every field
// Ollama has a home for (tools, stop, top_p, seed, penalties, response_format,
// images); the answer keeps one id for the whole stream, maps finish reasons
// (stop / length / tool_calls) and reports usage.
import { openaiError } from "../core/wire-errors.ts";
import { type Chunk, type DoneReason, fold, type Usage } from "../core/events.ts";
import type { Conversation, Message, Options, ToolCall } from "../core/conversation.ts";
import { argumentsObject, argumentsText } from "../core/tool-arguments.ts";
import { effortThink } from "../fleet/thinking-models.ts";
import type { Encoder } from "../core/encoder.ts";
import { randomId } from "./ids.ts";
import { numericOptions } from "./numeric-options.ts";
import { functionTools } from "./ollama-request.ts";
import { EVENT_STREAM, sse } from "./sse.ts";

type Json = Record<string, unknown>;

/** Seed 000's default for /v1/chat/completions' `temperature`, sent when the client sends none. */
const DEFAULT_TEMPERATURE = 0.7;

/** The conversation of a Chat Completions request, or a message naming the field that is wrong. */
export function chatConversation(body: Json): Conversation | string {
  if (!Array.isArray(body.messages)) return "messages: expected a list of messages";
  const messages: Message[] = [];
  for (const [i, m] of (body.messages as Json[]).entries()) {
    const converted = message(m, i);
    if (typeof converted === "string") return converted;
    messages.push(converted);
  }
  const options = samplingOptions({ ...body, temperature: body.temperature ?? DEFAULT_TEMPERATURE });
  if (typeof options === "string") return options;
  const out: Conversation = { messages, tools: [], options, extra: {} };
  if (body.tools !== undefined && body.tool_choice !== "none") {
    const tools = functionTools(body.tools);
    if (typeof tools === "string") return tools;
    out.tools = tools;
  }
  const rf = body.response_format as Json | null | undefined;
  const format = rf ? ollamaFormat("response_format", rf.type, (rf.json_schema as Json | undefined)?.schema, "response_format.json_schema.schema") : {};
  if (typeof format === "string") return format;
  Object.assign(out, format);
  const effort = body.reasoning_effort;
  if (effort !== undefined && effort !== null && typeof effort !== "string") return "reasoning_effort: expected a string";
  const think = effortThink(effort ?? undefined, typeof body.model === "string" ? body.model : "");
  if (think !== undefined) out.think = think;
  return out;
}

/** Ollama's options for the sampling fields Chat Completions and the legacy Completions share, or a message naming the field that is wrong. */
export function samplingOptions(body: Json): Options | string {
  const options: Options | string = numericOptions([
    ["temperature", "temperature", body.temperature],
    ["top_p", "top_p", body.top_p],
    ["seed", "seed", body.seed],
    ["frequency_penalty", "frequency_penalty", body.frequency_penalty],
    ["presence_penalty", "presence_penalty", body.presence_penalty],
    ["max_tokens", "num_predict", body.max_completion_tokens ?? body.max_tokens],
  ]);
  if (typeof options === "string") return options;
  if (body.stop !== undefined && body.stop !== null) {
    const stop = typeof body.stop === "string" ? [body.stop] : body.stop;
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== "string")) return "stop: expected a string or a list of strings";
    options.stop = stop;
  }
  return options;
}

function message(m: Json, i: number): Message | string {
  const at = `messages[${i}]`;
  if (!m || typeof m !== "object" || typeof m.role !== "string") return `${at}.role: expected a string`;
  const out: Message = { role: m.role === "developer" ? "system" : m.role, content: "" };
  if (typeof m.content === "string") out.content = m.content;
  else if (Array.isArray(m.content)) {
    const texts: string[] = [];
    const images: string[] = [];
    for (const [j, part] of (m.content as Json[]).entries()) {
      if (part?.type === "text" && typeof part.text === "string") texts.push(part.text);
      else if (part?.type === "image_url") {
        const data = dataUrlBase64((part.image_url as Json | undefined)?.url);
        if (!data) return `${at}.content[${j}].image_url.url: expected a data: URL with base64 image data (herd does not fetch remote images)`;
        images.push(data);
      } else return `${at}.content[${j}].type: expected "text" or "image_url"`;
    }
    out.content = texts.join("\n");
    if (images.length) out.images = images;
  } else if (m.content !== undefined && m.content !== null) return `${at}.content: expected a string or a list of parts`;
  if (Array.isArray(m.tool_calls)) {
    const calls: ToolCall[] = [];
    for (const [j, call] of (m.tool_calls as Json[]).entries()) {
      const fn = call?.function as Json | undefined;
      if (!fn || typeof fn.name !== "string") return `${at}.tool_calls[${j}].function.name: expected a string`;
      const args = argumentsObject(fn.arguments);
      if (args === null) return `${at}.tool_calls[${j}].function.arguments: expected a JSON object in a string`;
      calls.push({ ...(typeof call.id === "string" && call.id ? { id: call.id } : {}), name: fn.name, arguments: args });
    }
    out.toolCalls = calls;
  }
  if (m.role === "tool" && typeof m.name === "string") out.toolName = m.name;
  if (typeof m.tool_call_id === "string") out.toolCallId = m.tool_call_id;
  return out;
}

/** Ollama's `format` for an OpenAI output format ("json", or the JSON schema; none for plain text), or a message naming what is wrong. */
export function ollamaFormat(at: string, type: unknown, schema: unknown, schemaAt: string): { format?: unknown } | string {
  if (type === "text") return {};
  if (type === "json_object") return { format: "json" };
  if (type === "json_schema") return schema && typeof schema === "object" ? { format: schema } : `${schemaAt}: expected an object`;
  return `${at}.type: expected "text", "json_object" or "json_schema"`;
}

/** The base64 payload of a data: URL, which Ollama's `images` take bare; anything else is undefined (herd fetches no remote images). */
export function dataUrlBase64(url: unknown): string | undefined {
  return typeof url === "string" ? /^data:[^;,]+;base64,(.*)$/s.exec(url)?.[1] : undefined;
}


/** Writes an answer's Events as OpenAI chat completions: SSE chunks (one per chunk of the node's), or one object. */
export function chatEncoder(stream: boolean, includeUsage: boolean): Encoder {
  const id = randomId("chatcmpl-");
  const created = Math.floor(Date.now() / 1000);
  let toolCalls = 0;
  let started = false;
  // A whole answer: what the chunks said, gathered until its end.
  let text = "";
  let reasoning = "";
  const calls: Json[] = [];
  const base = (model: unknown) => ({ id, object: stream ? "chat.completion.chunk" : "chat.completion", created, model, system_fingerprint: "fp_herd" });

  return {
    contentType: stream ? EVENT_STREAM : "application/json",
    encode(chunk: Chunk) {
      const { model } = chunk;
      const { text: content, thinking, calls: called, usage, done } = fold(chunk);
      const pieces = called.length
        ? called.map((c) => ({ index: toolCalls++, id: c.id ?? randomId("call_"), type: "function", function: { name: c.name, arguments: argumentsText(c.arguments) } }))
        : undefined;
      if (!stream) {
        text += content;
        reasoning += thinking;
        if (pieces) calls.push(...pieces);
        if (!done) return "";
        const message: Json = { role: "assistant", content: calls.length && !text ? null : text };
        if (reasoning) message.reasoning = reasoning;
        if (calls.length) message.tool_calls = calls;
        return JSON.stringify({ ...base(model), choices: [{ index: 0, message, finish_reason: finishReason(done, toolCalls), logprobs: null }], usage: openaiUsage(usage) });
      }
      let out = "";
      // OpenAI's first chunk carries the role alone; the content follows in the next ones.
      if (!started) {
        started = true;
        out += sse({ ...base(model), choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null, logprobs: null }] });
      }
      const delta: Json = {};
      if (content) delta.content = content;
      if (thinking) delta.reasoning = thinking;
      if (pieces) delta.tool_calls = pieces;
      if (Object.keys(delta).length) out += sse({ ...base(model), choices: [{ index: 0, delta, finish_reason: null, logprobs: null }] });
      if (done) {
        out += sse({ ...base(model), choices: [{ index: 0, delta: {}, finish_reason: finishReason(done, toolCalls), logprobs: null }] });
        if (includeUsage) out += sse({ ...base(model), choices: [], usage: openaiUsage(usage) });
      }
      return out;
    },
    ...openaiEnds(stream),
  };
}

/** How an OpenAI answer ends, streamed (`data: [DONE]`, or an error event once the stream has begun) or whole, and its errors before the first byte. */
export function openaiEnds(stream: boolean): Pick<Encoder, "end" | "fail" | "error"> {
  return {
    end: () => (stream ? "data: [DONE]\n\n" : ""),
    fail: (message) => (stream ? sse({ error: { message, type: "api_error", param: null, code: null } }) : ""),
    error: openaiError,
  };
}

function finishReason(reason: DoneReason, toolCalls: number): string {
  return toolCalls ? "tool_calls" : reason;
}

export function openaiUsage(usage: Usage | undefined) {
  const prompt = usage?.promptTokens ?? 0;
  const completion = usage?.completionTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
