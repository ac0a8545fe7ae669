// An Ollama client's request decoded into the typed conversation. herd checks the
// fields it reads (a clear 400 naming the field, rather than a node's error or a
// wrong route); the fields it does not model are kept, on the body and on each
// message, so the node still gets everything the client sent.
import { type Conversation, type Message, NUMERIC_OPTIONS, type Options, type Tool, type ToolCall } from "../core/conversation.ts";
import type { RequestKind } from "../core/request.ts";
import { argumentsObject } from "../core/tool-arguments.ts";

type Json = Record<string, unknown>;

const MODELED = new Set(["model", "messages", "prompt", "system", "images", "input", "tools", "options", "think", "format", "keep_alive", "stream"]);
/** The conversation fields each kind reads (an embedding's text is under one name by now). */
const READS: Record<RequestKind, string[]> = { chat: ["messages"], generate: ["prompt", "system", "images"], embed: ["input", "prompt"] };
const MESSAGE_MODELED = new Set(["role", "content", "images", "thinking", "tool_calls", "tool_name", "tool_call_id"]);

/** The conversation of an Ollama body (herd's fields taken out, an embedding's text under the name its route reads), or a message naming the field that is wrong. */
export function ollamaConversation(body: Json, kind: RequestKind): Conversation | string {
  const c: Conversation = { tools: [], options: {}, extra: rest(body, MODELED) };
  if (kind === "chat" && body.messages !== undefined) {
    if (!Array.isArray(body.messages)) return "messages: expected a list";
    const messages: Message[] = [];
    for (const [i, m] of body.messages.entries()) {
      const decoded = message(m, `messages[${i}]`);
      if (typeof decoded === "string") return decoded;
      messages.push(decoded);
    }
    c.messages = messages;
  }
  if (kind === "generate") {
    for (const field of ["prompt", "system"] as const) {
      if (body[field] === undefined) continue;
      if (typeof body[field] !== "string") return `${field}: expected a string`;
      c[field] = body[field];
    }
    if (body.images !== undefined) {
      if (!isImages(body.images)) return "images: expected a list of base64 strings";
      c.images = body.images;
    }
  }
  if (kind === "embed") c.input = (body.input ?? body.prompt) as string | string[];
  // A conversation field the kind does not read is the client's own, passed on.
  for (const field of ["messages", "prompt", "system", "images", "input"]) if (!READS[kind].includes(field) && body[field] !== undefined) c.extra[field] = body[field];
  if (body.tools !== undefined) {
    const tools = functionTools(body.tools);
    if (typeof tools === "string") return tools;
    c.tools = tools;
  }
  if (body.options !== undefined && body.options !== null) {
    const options = optionsOf(body.options);
    if (typeof options === "string") return options;
    c.options = options;
  }
  if (body.think !== undefined && body.think !== null) {
    if (typeof body.think !== "boolean" && typeof body.think !== "string") return `think: expected true, false or a level ("low", "medium", "high")`;
    c.think = body.think;
  }
  if (body.format !== undefined) c.format = body.format;
  if (body.keep_alive !== undefined) c.keepAlive = body.keep_alive;
  return c;
}

function rest(object: Json, modeled: Set<string>): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(object)) if (!modeled.has(k)) out[k] = v;
  return out;
}

const isImages = (v: unknown): v is string[] => Array.isArray(v) && v.every((i) => typeof i === "string");

function message(m: unknown, at: string): Message | string {
  if (!m || typeof m !== "object" || Array.isArray(m)) return `${at}: expected a message object`;
  const { role, content, images, thinking, tool_calls, tool_name, tool_call_id } = m as Json;
  if (typeof role !== "string") return `${at}.role: expected a string`;
  if (content !== undefined && content !== null && typeof content !== "string") return `${at}.content: expected a string`;
  const out: Message = { role, content: content ?? "" };
  if (images !== undefined && images !== null) {
    if (!isImages(images)) return `${at}.images: expected a list of base64 strings`;
    out.images = images;
  }
  for (const [field, value] of [["thinking", thinking], ["tool_name", tool_name], ["tool_call_id", tool_call_id]] as const) {
    if (value !== undefined && value !== null && typeof value !== "string") return `${at}.${field}: expected a string`;
  }
  if (typeof thinking === "string") out.thinking = thinking;
  if (typeof tool_name === "string") out.toolName = tool_name;
  if (typeof tool_call_id === "string") out.toolCallId = tool_call_id;
  if (tool_calls !== undefined && tool_calls !== null) {
    if (!Array.isArray(tool_calls)) return `${at}.tool_calls: expected a list`;
    const calls: ToolCall[] = [];
    for (const [j, call] of tool_calls.entries()) {
      const fn = (call as Json | null)?.function as Json | undefined;
      if (!fn || typeof fn.name !== "string") return `${at}.tool_calls[${j}].function.name: expected a string`;
      const args = argumentsObject(fn.arguments);
      if (args === null) return `${at}.tool_calls[${j}].function.arguments: expected an object`;
      const id = (call as Json).id;
      calls.push({ ...(typeof id === "string" ? { id } : {}), name: fn.name, arguments: args });
    }
    out.toolCalls = calls;
  }
  const extra = rest(m as Json, MESSAGE_MODELED);
  if (Object.keys(extra).length) out.extra = extra;
  return out;
}

/** Tools as Ollama's list has them, which is OpenAI's Chat Completions shape too: `{type: "function", function: {name, description, parameters}}`. */
export function functionTools(tools: unknown): Tool[] | string {
  if (tools === null) return [];
  if (!Array.isArray(tools)) return "tools: expected a list";
  const out: Tool[] = [];
  for (const [i, t] of tools.entries()) {
    const fn = (t as Json | null)?.function as Json | undefined;
    if (!fn || typeof fn.name !== "string") return `tools[${i}].function.name: expected a string`;
    if (fn.parameters !== undefined && (!fn.parameters || typeof fn.parameters !== "object")) return `tools[${i}].function.parameters: expected a JSON schema object`;
    out.push({ name: fn.name, ...(typeof fn.description === "string" ? { description: fn.description } : {}), ...(fn.parameters !== undefined ? { parameters: fn.parameters as Json } : {}) });
  }
  return out;
}

function optionsOf(options: unknown): Options | string {
  if (typeof options !== "object" || Array.isArray(options)) return "options: expected an object";
  const out = { ...(options as Json) };
  for (const name of NUMERIC_OPTIONS) if (out[name] !== undefined && out[name] !== null && typeof out[name] !== "number") return `options.${name}: expected a number`;
  if (out.stop !== undefined && (!Array.isArray(out.stop) || out.stop.some((s) => typeof s !== "string"))) return "options.stop: expected a list of strings";
  return out as Options;
}
