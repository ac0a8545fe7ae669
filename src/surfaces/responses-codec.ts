// OpenAI Responses ⇄ the typed conversation. Input items become chat messages
// (reasoning items stay out of the prompt: they are the model's own past
// thoughts, which Ollama does not take back); function and custom tools,
// Codex's additional_tools and namespaces included, become function tools. The answer is the Responses event sequence, or one Response object,
// with each tool call as the kind of item the client declared its tool as.
import type { Chunk, ToolCall, Usage } from "../core/events.ts";
import type { Conversation, Message, Options, Tool } from "../core/conversation.ts";
import { argumentsObject, argumentsText } from "../core/tool-arguments.ts";
import type { Encoder } from "../core/encoder.ts";
import { thinkingTokens } from "../core/tokens.ts";
import { codexRewrite, type Offered } from "./codex-rewrites.ts";
import { randomId } from "./ids.ts";
import { numericOptions } from "./numeric-options.ts";
import { dataUrlBase64, ollamaFormat } from "./openai-codec.ts";
import { openaiError } from "../core/wire-errors.ts";
import { EVENT_STREAM, sse } from "./sse.ts";

type Json = Record<string, unknown>;

/** A Responses request as a conversation, before the model is chosen (images steer that choice). */
export interface Translated {
  messages: Message[];
  tools: Tool[];
  offered: Offered;
  /** What was dropped because herd does not translate it, by type: `input items of type "web_search_call"`. */
  dropped: string[];
  options: Options;
  format?: unknown;
  effort?: string;
  /** The request's settings, as a Response object repeats them. */
  echo: Json;
}

/** The request read, or a message naming the field that is wrong. */
export function readResponsesRequest(body: Json): Translated | string {
  const t: Translated = { messages: [], tools: [], offered: new Map(), dropped: [], options: {}, echo: echoOf(body) };
  const dropped = new Set<string>();
  if (body.instructions !== undefined && body.instructions !== null) {
    if (typeof body.instructions !== "string") return "instructions: expected a string";
    if (body.instructions) t.messages.push({ role: "system", content: body.instructions });
  }
  if (body.tools !== undefined && body.tools !== null) {
    const wrong = addTools(t, dropped, body.tools, "tools");
    if (wrong) return wrong;
  }
  if (typeof body.input === "string") t.messages.push({ role: "user", content: body.input });
  else if (Array.isArray(body.input)) {
    const names = new Map<string, string>(); // call_id → tool name, for the results
    for (const [i, item] of (body.input as Json[]).entries()) {
      const wrong = addItem(t, dropped, names, item, `input[${i}]`);
      if (wrong) return wrong;
    }
  } else return "input: expected a string or a list of items";
  if (!t.messages.length) return "input: no message to send (give a string, or message items)";
  if (body.tool_choice === "none") t.tools = [];
  t.dropped = [...dropped];

  const options = numericOptions([
    ["temperature", "temperature", body.temperature],
    ["top_p", "top_p", body.top_p],
    ["max_output_tokens", "num_predict", body.max_output_tokens],
  ]);
  if (typeof options === "string") return options;
  t.options = options;
  const textFormat = (body.text as Json | undefined)?.format as Json | undefined;
  if (textFormat) {
    const format = ollamaFormat("text.format", textFormat.type, textFormat.schema, "text.format.schema");
    if (typeof format === "string") return format;
    t.format = format.format;
  }
  const effort = (body.reasoning as Json | undefined)?.effort;
  if (effort !== undefined && effort !== null && typeof effort !== "string") return "reasoning.effort: expected a string";
  if (effort) t.effort = effort;
  return t;
}

/** The conversation, without `think`: a reasoning effort is one only some models take (pipeline/thinking.ts). */
export function conversationOf(t: Translated): Conversation {
  const out: Conversation = { messages: t.messages, tools: t.tools, options: t.options, extra: {} };
  if (t.format !== undefined) out.format = t.format;
  return out;
}

function echoOf(body: Json): Json {
  const reasoning = body.reasoning as Json | undefined;
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: reasoning?.effort ?? null, summary: reasoning?.summary ?? null },
    store: false,
    temperature: body.temperature ?? null,
    text: { format: (body.text as Json | undefined)?.format ?? { type: "text" } },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? null,
    truncation: "disabled",
  };
}

function addItem(t: Translated, dropped: Set<string>, names: Map<string, string>, item: Json, at: string): string | null {
  if (!item || typeof item !== "object") return `${at}: expected an item object`;
  // The short form {role, content} is a message too.
  const type = item.type ?? (typeof item.role === "string" ? "message" : undefined);
  if (typeof type !== "string") return `${at}.type: expected an item type`;
  switch (type) {
    case "message": {
      const message = readMessage(item, at);
      if (typeof message === "string") return message;
      t.messages.push(message);
      return null;
    }
    case "function_call": {
      const args = argumentsObject(item.arguments);
      if (args === null) return `${at}.arguments: expected a JSON object in a string`;
      return addCall(t, names, item, args, at);
    }
    case "custom_tool_call":
      if (typeof item.input !== "string") return `${at}.input: expected a string`;
      return addCall(t, names, item, { input: item.input }, at);
    case "function_call_output":
    case "custom_tool_call_output": {
      if (typeof item.call_id !== "string") return `${at}.call_id: expected a string`;
      const output = readParts(item.output, `${at}.output`);
      if (typeof output === "string") return output;
      const name = names.get(item.call_id);
      t.messages.push({ role: "tool", ...output, toolCallId: item.call_id, ...(name ? { toolName: name } : {}) });
      return null;
    }
    case "reasoning":
      return null;
    case "additional_tools":
      return addTools(t, dropped, item.tools, `${at}.tools`);
    default:
      dropped.add(`input items of type "${type}"`);
      return null;
  }
}

// Calls of one turn join the assistant message before them, as Ollama's chat history has them.
function addCall(t: Translated, names: Map<string, string>, item: Json, args: Json, at: string): string | null {
  if (typeof item.name !== "string" || !item.name) return `${at}.name: expected a string`;
  if (typeof item.call_id !== "string") return `${at}.call_id: expected a string`;
  names.set(item.call_id, item.name);
  const call = { id: item.call_id, name: item.name, arguments: args };
  const last = t.messages.at(-1);
  if (last?.role === "assistant") last.toolCalls = [...(last.toolCalls ?? []), call];
  else t.messages.push({ role: "assistant", content: "", toolCalls: [call] });
  return null;
}

function readMessage(item: Json, at: string): Message | string {
  const roles: Record<string, string> = { user: "user", assistant: "assistant", system: "system", developer: "system" };
  const role = roles[String(item.role)];
  if (!role) return `${at}.role: expected "user", "assistant", "system" or "developer"`;
  const content = readParts(item.content, `${at}.content`);
  return typeof content === "string" ? content : { role, ...content };
}

/** Text and images from a string or a list of content parts (message content, tool output). */
function readParts(value: unknown, at: string): { content: string; images?: string[] } | string {
  if (typeof value === "string") return { content: value };
  if (!Array.isArray(value)) return `${at}: expected a string or a list of content parts`;
  const texts: string[] = [];
  const images: string[] = [];
  for (const [i, part] of (value as Json[]).entries()) {
    const type = part?.type;
    if ((type === "input_text" || type === "output_text") && typeof part.text === "string") texts.push(part.text);
    else if (type === "refusal" && typeof part.refusal === "string") texts.push(part.refusal);
    else if (type === "input_image") {
      const data = dataUrlBase64(part.image_url);
      if (!data) return `${at}[${i}].image_url: expected a data: URL with base64 image data (herd does not fetch remote images or files)`;
      images.push(data);
    } else return `${at}[${i}].type: expected "input_text", "output_text" or "input_image"${type === "input_file" ? " (herd passes no files to Ollama)" : ""}`;
  }
  return { content: texts.join("\n"), ...(images.length ? { images } : {}) };
}

function addTools(t: Translated, dropped: Set<string>, list: unknown, at: string, namespace?: string): string | null {
  if (!Array.isArray(list)) return `${at}: expected a list of tools`;
  for (const [i, tool] of (list as Json[]).entries()) {
    if (tool?.type === "namespace") {
      if (typeof tool.name !== "string") return `${at}[${i}].name: expected a string`;
      const wrong = addTools(t, dropped, tool.tools, `${at}[${i}].tools`, tool.name);
      if (wrong) return wrong;
      continue;
    }
    if (tool?.type !== "function" && tool?.type !== "custom") {
      dropped.add(`tools of type "${String(tool?.type)}"`);
      continue;
    }
    const name = tool.name;
    if (typeof name !== "string" || !name) return `${at}[${i}].name: expected a string`;
    if (t.offered.has(name)) continue;
    t.offered.set(name, { kind: tool.type, ...(namespace ? { namespace } : {}) });
    const parameters = tool.type === "custom" ? customParameters(tool.format) : ((tool.parameters ?? { type: "object", properties: {} }) as Json);
    t.tools.push({ name, description: typeof tool.description === "string" ? tool.description : "", parameters });
  }
  return null;
}

// A custom tool takes raw text; Ollama's tools take JSON, so the text travels as one string, `input`.
function customParameters(format: unknown): Json {
  const f = format as Json | undefined;
  const description =
    f?.type === "grammar" && typeof f.definition === "string" ? `Raw text (not JSON) in this ${String(f.syntax ?? "")} grammar:\n${f.definition}` : "Raw text (not JSON)";
  return { type: "object", properties: { input: { type: "string", description } }, required: ["input"] };
}

/** The raw text of a custom tool's call: its `input` (see customParameters). */
function customInput(args: unknown): string {
  if (typeof args === "string") return args;
  const input = (args as Json | null)?.input;
  return typeof input === "string" ? input : JSON.stringify(args ?? {});
}

/**
 * Writes an answer's Events as the Responses API: SSE events (`event:` and
 * `data:` lines, one sequence_number each), or one Response object at the end.
 * Thinking is a reasoning item of `reasoning_text` content: it is the raw chain
 * of thought, not a summary. `warn` hears of each Codex rewrite.
 */
export function responsesEncoder(stream: boolean, t: Pick<Translated, "offered" | "echo">, warn: (message: string) => void): Encoder {
  const id = randomId("resp_");
  const createdAt = Math.floor(Date.now() / 1000);
  const output: Json[] = [];
  let model: unknown = null;
  let started = false;
  let sequence = 0;
  let pending = "";
  let reasoningChars = 0;
  // The reasoning or message item whose text is streaming, and that text so far.
  let open: { item: Json; index: number; text: string } | null = null;

  const emit = (type: string, fields: Json) => {
    if (stream) pending += sse({ type, sequence_number: sequence++, ...fields }, type);
  };
  const flush = () => {
    const out = pending;
    pending = "";
    return out;
  };
  const response = (status: string, fields: Json = {}) => ({
    id,
    object: "response",
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: null,
    model,
    output,
    usage: null,
    ...t.echo,
    ...fields,
  });
  const begin = () => {
    if (started) return;
    started = true;
    emit("response.created", { response: response("in_progress") });
    emit("response.in_progress", { response: response("in_progress") });
  };
  const add = (item: Json) => {
    Object.assign(item, { status: "in_progress" });
    output.push(item);
    emit("response.output_item.added", { output_index: output.length - 1, item });
    return output.length - 1;
  };
  const part = (reasoning: boolean, text: string) => (reasoning ? { type: "reasoning_text", text } : { type: "output_text", text, annotations: [], logprobs: [] });
  const where = (o: { item: Json; index: number }) => ({ item_id: o.item.id, output_index: o.index, content_index: 0 });

  const write = (reasoning: boolean, delta: string) => {
    if (!open || (open.item.type === "reasoning") !== reasoning) {
      close("completed");
      const item = reasoning ? { id: randomId("rs_"), type: "reasoning", summary: [], content: [] } : { id: randomId("msg_"), type: "message", role: "assistant", content: [] };
      open = { item, index: add(item), text: "" };
      emit("response.content_part.added", { ...where(open), part: part(reasoning, "") });
    }
    open.text += delta;
    emit(reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", { ...where(open), delta, ...(reasoning ? {} : { logprobs: [] }) });
  };
  const close = (status: string) => {
    if (!open) return;
    const reasoning = open.item.type === "reasoning";
    const done = part(reasoning, open.text);
    emit(reasoning ? "response.reasoning_text.done" : "response.output_text.done", { ...where(open), text: open.text, ...(reasoning ? {} : { logprobs: [] }) });
    emit("response.content_part.done", { ...where(open), part: done });
    Object.assign(open.item, { content: [done], status });
    emit("response.output_item.done", { output_index: open.index, item: open.item });
    open = null;
  };
  // One item per call, whole at once: a backend hands over each call complete.
  const toolCall = (raw: ToolCall) => {
    close("completed");
    const call = codexRewrite({ name: raw.name, args: raw.arguments }, t.offered, warn);
    const tool = t.offered.get(call.name);
    const custom = tool?.kind === "custom";
    const [field, value, events] = custom ? ["input", customInput(call.args), "response.custom_tool_call_input"] : ["arguments", argumentsText(call.args), "response.function_call_arguments"];
    const item: Json = {
      id: randomId(custom ? "ctc_" : "fc_"),
      type: custom ? "custom_tool_call" : "function_call",
      call_id: raw.id ?? randomId("call_"),
      name: call.name,
      ...(tool?.namespace ? { namespace: tool.namespace } : {}),
      [field]: "",
    };
    const index = add(item);
    emit(`${events}.delta`, { item_id: item.id, output_index: index, delta: value });
    emit(`${events}.done`, { item_id: item.id, output_index: index, ...(custom ? {} : { name: call.name }), [field]: value });
    Object.assign(item, { [field]: value, status: "completed" });
    emit("response.output_item.done", { output_index: index, item });
  };

  return {
    contentType: stream ? EVENT_STREAM : "application/json",
    encode(chunk: Chunk) {
      model = chunk.model ?? model;
      begin();
      let used: Usage | undefined;
      let incomplete: boolean | undefined;
      for (const e of chunk.events) {
        if (e.type === "thinking") {
          reasoningChars += e.text.length;
          write(true, e.text);
        } else if (e.type === "text") write(false, e.text);
        else if (e.type === "tool_call") toolCall(e);
        else if (e.type === "usage") used = e;
        // The model stopped at num_predict: the answer is cut short, as OpenAI reports max_output_tokens.
        else if (e.type === "done") incomplete = e.reason === "length";
      }
      if (incomplete === undefined) return flush();
      close(incomplete ? "incomplete" : "completed");
      const final = response(incomplete ? "incomplete" : "completed", {
        completed_at: Math.floor(Date.now() / 1000),
        usage: usage(used, reasoningChars),
        ...(incomplete ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
      });
      if (!stream) return JSON.stringify(final);
      emit(incomplete ? "response.incomplete" : "response.completed", { response: final });
      return flush();
    },
    end: () => "",
    fail(message) {
      begin();
      close("incomplete");
      const failed = response("failed", { error: { code: "server_error", message } });
      if (!stream) return JSON.stringify(failed);
      emit("response.failed", { response: failed });
      return flush();
    },
    error: openaiError,
  };
}

// The nodes do not count thinking tokens apart from the answer's: they are estimated from the text.
function usage(used: Usage | undefined, reasoningChars: number) {
  const input = used?.promptTokens ?? 0;
  const output = used?.completionTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: thinkingTokens(reasoningChars, output) },
    total_tokens: input + output,
  };
}
