// Anthropic Messages ⇄ the typed conversation. The request keeps everything Ollama
// has a home for (system, also mid-conversation; content blocks, images, tools,
// tool_use/tool_result, stop_sequences, sampling, structured output); fields
// with no local meaning (cache_control, context_management, effort, betas) are
// accepted and ignored. The answer's Events come back as content blocks: one
// Message object, or the exact SSE event sequence that builds it.
import { anthropicError } from "../core/wire-errors.ts";
import type { Chunk, DoneReason } from "../core/events.ts";
import type { Conversation, Message, Options, ToolCall } from "../core/conversation.ts";
import { argumentsObject } from "../core/tool-arguments.ts";
import type { Encoder } from "../core/encoder.ts";
import { type ThinkingRequest, signatureOf, thinkingOf, thinkingText } from "./anthropic-thinking.ts";
import { loadedToolsText, toolsOf } from "./anthropic-tools.ts";
import { randomId } from "./ids.ts";
import { numericOptions } from "./numeric-options.ts";
import { EVENT_STREAM, sse } from "./sse.ts";

type Json = Record<string, unknown>;

export interface Translated {
  /** The conversation, without `think`: that depends on the model (pipeline/thinking.ts). */
  conversation: Conversation;
  /** The client's stop_sequences, which the answer is scanned for (see StopScanner). */
  stops: string[];
  thinking: ThinkingRequest;
}

/** The conversation of a Messages request, or a message naming the field that is wrong. */
export function messagesConversation(req: Json, defaultMaxTokens: number): Translated | string {
  if (!Array.isArray(req.messages) || req.messages.length === 0) return "messages: expected a non-empty list of messages";
  const system = systemText(req.system);
  if (system === null) return "system: expected a string or a list of text blocks";
  const loaded = new Set<string>();
  const messages = chatMessages(req.messages as unknown[], loaded);
  if (typeof messages === "string") return messages;
  const tools = toolsOf(req.tools, req.tool_choice, loaded);
  if (typeof tools === "string") return tools;
  const instruction = [system, tools.instruction].filter(Boolean).join("\n\n");
  if (instruction) messages.unshift({ role: "system", content: instruction });

  const numPredict = req.max_tokens ?? defaultMaxTokens;
  if (!Number.isInteger(numPredict) || (numPredict as number) < 1) return "max_tokens: expected a whole number of at least 1";
  const sampling = numericOptions([
    ["temperature", "temperature", req.temperature],
    ["top_p", "top_p", req.top_p],
    ["top_k", "top_k", req.top_k],
  ]);
  if (typeof sampling === "string") return sampling;
  const options: Options = { num_predict: numPredict as number, ...sampling };
  const stops = req.stop_sequences ?? [];
  if (!Array.isArray(stops) || stops.some((s) => typeof s !== "string" || s === "")) return "stop_sequences: expected a list of non-empty strings";
  if (stops.length) options.stop = stops as string[];

  const conversation: Conversation = { messages, tools: tools.list, options, extra: {} };
  const format = formatOf(req);
  if (typeof format === "string") return format;
  if (format) conversation.format = format;
  const thinking = thinkingOf(req.thinking);
  if (typeof thinking === "string") return thinking;
  return { conversation, stops: stops as string[], thinking };
}

function systemText(system: unknown): string | null {
  if (system === undefined || system === null) return "";
  if (typeof system === "string") return system;
  if (!Array.isArray(system) || system.some((b) => b?.type !== "text" || typeof b.text !== "string")) return null;
  return system.map((b) => b.text as string).join("\n");
}

// Structured output: output_config.format (or the older output_format) is a JSON schema, which Ollama's `format` takes as it is.
// The rest of output_config (effort) has no local meaning.
function formatOf(req: Json): Json | undefined | string {
  const config = req.output_config;
  if (config !== undefined && config !== null && (typeof config !== "object" || Array.isArray(config))) return "output_config: expected an object";
  const given = (config as Json | null | undefined)?.format;
  const [field, format] = given !== undefined && given !== null ? ["output_config.format", given] : ["output_format", req.output_format];
  if (format === undefined || format === null) return undefined;
  const { type, schema } = format as Json;
  if (type !== "json_schema" || !schema || typeof schema !== "object" || Array.isArray(schema)) return `${field}: expected {"type": "json_schema", "schema": {…}}`;
  return schema as Json;
}

// A system message in `messages` adds instructions at that point, as Anthropic
// places them: never first, right after a user message (so never two in a row).
// One with no text only sets options (output_config.effort) and may stand anywhere.
function systemPlacement(list: Json[], i: number): string | null {
  if (i === 0) return `"system" cannot be the first message: opening instructions go in the top-level system field`;
  const before = list[i - 1]?.role;
  return before === "user" ? null : `a "system" message must directly follow a user message, not ${before === "system" ? "another system message" : `a message with role ${JSON.stringify(before)}`}`;
}

// Anthropic keeps a turn's tool results inside a user message; Ollama wants a
// "tool" message per result, named after the tool_use it answers. The tools
// tool_reference blocks load are added to `loaded`.
function chatMessages(list: unknown[], loaded: Set<string>): Message[] | string {
  const out: Message[] = [];
  const toolNames = new Map<string, string>();
  for (const [i, m] of (list as Json[]).entries()) {
    const at = `messages[${i}]`;
    if (m?.role === "system") {
      const text = m.content === undefined ? null : systemText(m.content);
      if (text === null) return `${at}.content: expected a string or a list of text blocks`;
      const misplaced = text ? systemPlacement(list as Json[], i) : null;
      if (misplaced) return `${at}.role: ${misplaced}`;
      if (text) out.push({ role: "system", content: text });
      continue;
    }
    if (m?.role !== "user" && m?.role !== "assistant") return `${at}.role: expected "user", "assistant" or "system"`;
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (!Array.isArray(m.content)) return `${at}.content: expected a string or a list of content blocks`;
    const texts: string[] = [];
    const images: string[] = [];
    const thinking: string[] = [];
    const calls: ToolCall[] = [];
    for (const [j, block] of (m.content as Json[]).entries()) {
      const where = `${at}.content[${j}]`;
      switch (block?.type) {
        case "text":
          if (typeof block.text !== "string") return `${where}.text: expected a string`;
          texts.push(block.text);
          break;
        case "image": {
          const image = imageOf(block, where);
          if (typeof image === "string") return image;
          images.push(image.base64);
          break;
        }
        case "document": {
          const document = documentOf(block, where);
          if (typeof document === "string") return document;
          texts.push(document.text);
          break;
        }
        case "thinking": {
          const text = thinkingText(block);
          if (text) thinking.push(text);
          break;
        }
        case "redacted_thinking":
          break; // encrypted by Anthropic: nothing a local model can read
        case "tool_use":
          if (typeof block.id !== "string" || typeof block.name !== "string") return `${where}: a tool_use block needs a string id and name`;
          toolNames.set(block.id, block.name);
          const input = block.input ?? {};
          if (typeof input !== "object" || Array.isArray(input)) return `${where}.input: expected an object`;
          calls.push({ id: block.id, name: block.name, arguments: input as Json });
          break;
        case "tool_result": {
          const result = toolResult(block, where, toolNames, loaded);
          if (typeof result === "string") return result;
          out.push(result);
          break;
        }
        default:
          return `${where}.type: expected "text", "image", "document", "thinking", "tool_use" or "tool_result", got ${JSON.stringify(block?.type)}`;
      }
    }
    if (!texts.length && !images.length && !thinking.length && !calls.length) continue;
    const message: Message = { role: m.role, content: texts.join("\n") };
    if (images.length) message.images = images;
    if (thinking.length) message.thinking = thinking.join("\n");
    if (calls.length) message.toolCalls = calls;
    out.push(message);
  }
  return out;
}

// A text document (Claude Code's Read of a text file, a citation source) is text to a local model; a PDF is
// not: no Ollama model reads one, so it is refused by name rather than dropped unseen.
function documentOf(block: Json, where: string): { text: string } | string {
  const source = block.source as Json | undefined;
  const title = typeof block.title === "string" && block.title ? `${block.title}\n` : "";
  if (source?.type === "text" && typeof source.data === "string") return { text: title + source.data };
  if (source?.type === "content" && Array.isArray(source.content)) {
    const texts = (source.content as Json[]).map((b) => (b?.type === "text" && typeof b.text === "string" ? b.text : null));
    if (texts.every((t) => t !== null)) return { text: title + texts.join("\n") };
    return `${where}.source.content: expected a list of text blocks`;
  }
  return `${where}.source: herd's local models read text documents only (source type "text" or "content"), not ${JSON.stringify(source?.type ?? null)}${source?.media_type ? ` (${source.media_type})` : ""}`;
}

function imageOf(block: Json, where: string): { base64: string } | string {
  const source = block.source as Json | undefined;
  if (source?.type !== "base64" || typeof source.data !== "string") return `${where}.source: expected a base64 image source (herd does not fetch image URLs)`;
  return { base64: source.data };
}

// Ollama has no error flag on a tool result: the model reads it in the text.
function toolResult(block: Json, where: string, toolNames: Map<string, string>, loaded: Set<string>): Message | string {
  const texts: string[] = [];
  const images: string[] = [];
  const references: string[] = [];
  if (typeof block.content === "string") texts.push(block.content);
  else if (Array.isArray(block.content)) {
    for (const [k, part] of (block.content as Json[]).entries()) {
      if (part?.type === "text" && typeof part.text === "string") texts.push(part.text);
      else if (part?.type === "image") {
        const image = imageOf(part, `${where}.content[${k}]`);
        if (typeof image === "string") return image;
        images.push(image.base64);
      } else if (part?.type === "document") {
        const document = documentOf(part, `${where}.content[${k}]`);
        if (typeof document === "string") return document;
        texts.push(document.text);
      } else if (part?.type === "tool_reference") {
        if (typeof part.tool_name !== "string" || !part.tool_name) return `${where}.content[${k}].tool_name: expected a string`;
        references.push(part.tool_name);
        loaded.add(part.tool_name);
      } else return `${where}.content[${k}].type: expected "text", "image", "document" or "tool_reference"`;
    }
  } else if (block.content !== undefined) return `${where}.content: expected a string or a list of text, image, document and tool_reference blocks`;
  if (references.length) texts.push(loadedToolsText(references));
  const text = texts.join("\n");
  const message: Message = { role: "tool", content: block.is_error === true ? `Error: ${text}` : text };
  const name = typeof block.tool_use_id === "string" ? toolNames.get(block.tool_use_id) : undefined;
  if (name) message.toolName = name;
  if (typeof block.tool_use_id === "string") message.toolCallId = block.tool_use_id;
  if (images.length) message.images = images;
  return message;
}


/** A stream event, named after its type on the wire. */
type StreamEvent = Json & { type: string };

export interface TurnOptions {
  /** The model id as the client sent it: Anthropic answers with the id it was asked for. */
  model: string;
  /**
   * herd's count of the prompt: input_tokens in message_start, message_delta and the Message alike, as
   * count_tokens reports it (the node's own count comes only at the end; it goes in the trace). Read when the answer
   * starts: the pipeline may clear old tool results first.
   */
  inputTokens: () => number;
  stops: string[];
  /** thinking.display "omitted": thinking blocks without their text (it is in the signature). */
  omitThinking: boolean;
}

/** Writes an answer's Events as an Anthropic Message: SSE events, or one object. */
export function messagesEncoder(stream: boolean, opts: TurnOptions & { pingEveryMs: number }): Encoder {
  let started: Turn | undefined;
  const turn = () => (started ??= new Turn(opts));
  return {
    contentType: stream ? EVENT_STREAM : "application/json",
    encode(chunk: Chunk) {
      const events = turn().feed(chunk);
      if (stream) return events.map((e) => sse(e, e.type)).join("");
      return turn().message.stop_reason ? JSON.stringify(turn().message) : "";
    },
    end: () => "",
    fail: (message) => {
      const error: StreamEvent = { type: "error", error: { type: "api_error", message } };
      return stream ? sse(error, error.type) : JSON.stringify(error);
    },
    error: anthropicError,
    keepAlive: stream ? { everyMs: opts.pingEveryMs, bytes: sse({ type: "ping" }, "ping") } : undefined,
  };
}

/**
 * One assistant turn built from an answer's Events: the Message so far, and the
 * stream events that build it. Blocks follow the order the model produced
 * them in: thinking, text, tool_use; a new kind closes the open block.
 */
class Turn {
  readonly message: Json & { content: Json[]; usage: Json };
  private open: "text" | "thinking" | null = null;
  /** The open thinking block's text, for its signature (the block itself has none when thinking is omitted). */
  private reasoning = "";
  private toolUses = 0;
  private readonly scanner: StopScanner;
  private started = false;
  private events: StreamEvent[] = [];

  constructor(private readonly opts: TurnOptions) {
    this.scanner = new StopScanner(opts.stops);
    this.message = {
      id: randomId("msg_"),
      type: "message",
      role: "assistant",
      model: opts.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: opts.inputTokens(), cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
    };
  }

  /** The stream events one chunk of the answer adds (the first also starts the message). */
  feed(chunk: Chunk): StreamEvent[] {
    this.events = [];
    if (!this.started) this.events.push({ type: "message_start", message: { ...this.message, content: [], usage: { ...this.message.usage } } });
    this.started = true;
    let outputTokens = 0;
    for (const e of chunk.events) {
      // Once a stop sequence has matched, the rest of the generation is not part of the answer.
      if (e.type === "thinking") {
        if (!this.scanner.matched) this.append("thinking", e.text);
      } else if (e.type === "text") {
        if (!this.scanner.matched) this.append("text", this.scanner.push(e.text));
      } else if (e.type === "tool_call") {
        if (!this.scanner.matched) this.toolUse(e.name, e.arguments);
      } else if (e.type === "usage") outputTokens = e.completionTokens ?? 0;
      else if (e.type === "done") this.finish(e.reason, outputTokens);
    }
    return this.events;
  }

  private append(kind: "text" | "thinking", piece: string): void {
    if (!piece) return;
    if (this.open !== kind) {
      this.close();
      this.start(kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" });
      this.open = kind;
    }
    if (kind === "thinking") {
      this.reasoning += piece;
      if (this.opts.omitThinking) return;
    }
    const index = this.message.content.length - 1;
    const block = this.message.content[index]!;
    block[kind] = (block[kind] as string) + piece;
    this.events.push({ type: "content_block_delta", index, delta: kind === "text" ? { type: "text_delta", text: piece } : { type: "thinking_delta", thinking: piece } });
  }

  private toolUse(name: string, args: unknown): void {
    this.append("text", this.scanner.flush()); // held-back text comes before the call
    this.close();
    const input = argumentsObject(args) ?? {}; // Anthropic's input is always an object
    const index = this.start({ type: "tool_use", id: randomId("toolu_"), name, input: {} });
    this.message.content[index]!.input = input;
    this.events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(input) } });
    this.events.push({ type: "content_block_stop", index });
    this.toolUses++;
  }

  private start(block: Json): number {
    const index = this.message.content.length;
    this.message.content.push({ ...block });
    this.events.push({ type: "content_block_start", index, content_block: block });
    return index;
  }

  // A thinking block ends with its signature, as Anthropic's do: a signature_delta just before content_block_stop.
  private close(): void {
    if (!this.open) return;
    const index = this.message.content.length - 1;
    if (this.open === "thinking") {
      const signature = signatureOf(this.reasoning);
      this.message.content[index]!.signature = signature;
      this.events.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } });
      this.reasoning = "";
    }
    this.events.push({ type: "content_block_stop", index });
    this.open = null;
  }

  private finish(reason: DoneReason, outputTokens: number): void {
    // Text held back as a possible start of a stop sequence was text after all.
    this.append("text", this.scanner.flush());
    this.close();
    const stopReason = this.scanner.matched !== null ? "stop_sequence" : this.toolUses ? "tool_use" : reason === "length" ? "max_tokens" : "end_turn";
    const usage = { ...this.message.usage, output_tokens: outputTokens };
    Object.assign(this.message, { stop_reason: stopReason, stop_sequence: this.scanner.matched, usage });
    this.events.push({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: this.scanner.matched }, usage });
    this.events.push({ type: "message_stop" });
  }
}

/**
 * Finds the client's stop sequences in the answer's text. Ollama gets them as
 * options.stop, stops there and drops the match, and its done_reason is "stop"
 * either way, so a stop sequence Ollama honoured is indistinguishable from the
 * model's own end and reads as end_turn. A backend that leaves the match in the
 * text (or ignores options.stop) is caught here: the text is cut before it,
 * nothing after it is sent, and the turn ends with stop_sequence. Text that
 * could be the start of a stop sequence is held back until it cannot.
 */
export class StopScanner {
  matched: string | null = null;
  private held = "";

  constructor(private readonly stops: string[]) {}

  /** The part of `text` that is safe to send now. */
  push(text: string): string {
    if (this.matched !== null) return "";
    if (!this.stops.length) return text;
    const buffer = this.held + text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = buffer.indexOf(stop);
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at;
        this.matched = stop;
      }
    }
    if (cut >= 0) {
      this.held = "";
      return buffer.slice(0, cut);
    }
    let keep = 0;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, buffer.length); n > keep; n--) {
        if (buffer.endsWith(stop.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.held = buffer.slice(buffer.length - keep);
    return buffer.slice(0, buffer.length - keep);
  }

  /** What is held back, released: the text went on without completing a stop sequence. */
  flush(): string {
    const held = this.held;
    this.held = "";
    return held;
  }
}
