// Deterministic replies: the same (model, conversation) always produces the
// same thinking, text or tool call, split into token-sized pieces. Token
// counts here feed prompt_eval_count / eval_count and OpenAI usage.
import { createHash } from "node:crypto";

export interface ChatMessage {
  role: string;
  content: string;
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  format?: string;
  minimum?: number;
}

export interface ToolSpec {
  type?: string;
  function: { name: string; description?: string; parameters?: JsonSchema };
}

export interface ToolCall {
  /** Ollama-style id ("call_" + 8 lowercase alphanumerics), stable per conversation. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ReplyRequest {
  model: string;
  messages: ChatMessage[];
  /** Produce reasoning before the answer (thinking-capable models). */
  think?: boolean;
  /** "json" or a JSON schema: the answer is JSON text. */
  format?: unknown;
  tools?: ToolSpec[];
  /** num_predict / max_tokens: cap on generated tokens. */
  maxTokens?: number;
}

export interface Reply {
  thinking: string[];
  content: string[];
  toolCall?: ToolCall;
  /** Tokens spent writing the tool call: generated, but not streamed as text. */
  callTokens: number;
  /** Tokens generated: thinking + content + callTokens. */
  evalCount: number;
  /** The token cap cut the reply short (done_reason / finish_reason "length"). */
  truncated: boolean;
}

const OPENERS = [
  "Here is a short answer about {topic}.",
  "Good question about {topic}.",
  "Let's look at {topic}.",
  "A few points stand out about {topic}.",
];

const SENTENCES = [
  "The short version is that it depends on the constraints you care about most.",
  "Start with the simplest approach that works, then measure before optimising.",
  "In practice most of the cost comes from a small part of the system.",
  "A quick experiment will usually tell you more than a long debate.",
  "Keep the interface small so the implementation can change underneath it.",
  "If latency matters, look at the slowest step first.",
  "Caching helps, but only when the same work really repeats.",
  "Write down the assumption you are least sure about and test it.",
  "Local models trade a little quality for privacy, cost and control.",
  "Smaller models answer faster, while larger ones follow instructions better.",
  "Batching requests raises throughput at the price of latency.",
  "On a Mac, memory bandwidth rather than compute usually limits generation speed.",
];

const THOUGHTS = [
  "I should keep the answer short and practical.",
  "The user probably wants a direct recommendation.",
  "Let me list the main trade-offs first.",
];

/**
 * Chat messages from an untrusted request body. Content is a string or, in
 * the OpenAI format, a list of parts of which only the text ones matter here.
 */
export function parseMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value)) return [];
  return value.map((m: { role?: unknown; content?: unknown } | null) => ({
    role: typeof m?.role === "string" ? m.role.toLowerCase() : "",
    content: Array.isArray(m?.content)
      ? m.content.map((part: { text?: unknown } | null) => (typeof part?.text === "string" ? part.text : "")).join("")
      : typeof m?.content === "string"
        ? m.content
        : "",
  }));
}

/** The usable tool definitions of an untrusted `tools` field. */
export function parseTools(value: unknown): ToolSpec[] {
  return Array.isArray(value) ? value.filter((t: ToolSpec | null) => typeof t?.function?.name === "string" && t.function.name !== "") : [];
}

/** Split text into token-sized pieces; joining them gives the text back. */
function tokenize(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

/** Token ids for text: stable per piece, like a real vocabulary lookup. */
export function tokenIds(text: string): number[] {
  return tokenize(text).map((piece) => hash32(piece) % 128000);
}

/**
 * Token ids of a chat prompt as a template would render it: each message is
 * role marker + content + end marker, then the assistant marker. Markers are
 * single special tokens, so a conversation extended by one turn shares its
 * whole prefix with the previous prompt plus reply (what prompt caches reuse).
 */
export function promptTokenIds(messages: readonly ChatMessage[]): number[] {
  const special = (name: string) => 128000 + (hash32(name) % 256);
  const ids = messages.flatMap((m) => [special(m.role), ...tokenIds(m.content), special("end")]);
  return [...ids, special("assistant")];
}

/** The tokens a reply generated (thinking, then content): what a prompt cache keeps after the prompt. */
export function replyTokenIds(r: Reply): number[] {
  return tokenIds([...r.thinking, ...r.content].join(""));
}

export function reply(req: ReplyRequest): Reply {
  const seed = createHash("sha256").update(`${req.model}\0${JSON.stringify(req.messages)}`).digest();
  const random = prng(seed.readUInt32LE(0));
  const lastUser = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
  // An agent's harness notes (Claude Code's <system-reminder> blocks) are not what the user asked about.
  const topic = lastUser.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, " ").replace(/[^\p{L}\p{N}\s'-]/gu, " ").trim().split(/\s+/).slice(0, 6).join(" ") || "your question";
  const cap = req.maxTokens !== undefined && req.maxTokens >= 0 ? req.maxTokens : Infinity;

  const thinking = req.think
    ? tokenize(`Okay, the user is asking about ${topic}. ${pick(THOUGHTS, random)}`)
    : [];

  const planned = plannedCall(req.messages, req.tools ?? []);
  if (typeof planned === "string") return textReply(tokenize(planned), thinking, cap);
  if (planned) {
    const call: ToolCall = {
      id: `call_${seed.readBigUInt64LE(8).toString(36).slice(0, 8).padStart(8, "0")}`,
      name: planned.tool.function.name,
      arguments: planned.args ?? sampleObject(planned.tool.function.parameters ?? {}),
    };
    // Compact JSON has no spaces to split on; ~4 characters per token is the usual BPE rate.
    const callTokens = Math.ceil(JSON.stringify({ name: call.name, arguments: call.arguments }).length / 4);
    const keptThinking = thinking.slice(0, cap);
    const spent = Math.min(callTokens, cap - keptThinking.length);
    // A call cut off mid-JSON is no call at all: the model just stops.
    return {
      thinking: keptThinking,
      content: [],
      toolCall: spent === callTokens ? call : undefined,
      callTokens: spent,
      evalCount: keptThinking.length + spent,
      truncated: spent < callTokens,
    };
  }

  return textReply(tokenize(answerText(req.format, topic, random)), thinking, cap);
}

function textReply(answer: string[], thinking: string[], cap: number): Reply {
  const pieces = [...thinking, ...answer].slice(0, cap);
  return {
    thinking: pieces.slice(0, thinking.length),
    content: pieces.slice(thinking.length),
    callTokens: 0,
    evalCount: pieces.length,
    truncated: pieces.length < thinking.length + answer.length,
  };
}

/**
 * The sim calls a tool only when asked to in so many words: each line of a
 * user message of the form `sim: call NAME {json arguments}` is one step of a
 * tool loop, taken in order, one per assistant turn after that message (the
 * arguments are optional: without them they are made from the tool's schema).
 * Once every step is taken, the model answers in text. A step naming a tool
 * the request does not offer is answered in text that says so. Nothing else
 * sets off a call: coding agents' prompts name their tools all the time.
 * `{{tool_result}}` in a string argument is the last tool result's text, so a
 * step can pass on what an earlier one learned (an agent's answer from a lead).
 */
const CALL_LINE = /^sim: call (\S+)(?:[ \t]+(.*))?$/gm;

function plannedCall(messages: ChatMessage[], tools: ToolSpec[]): { tool: ToolSpec; args?: Record<string, unknown> } | string | undefined {
  const at = messages.findLastIndex((m) => m.role === "user" && m.content.includes("sim: call "));
  if (at < 0) return undefined;
  const steps = [...messages[at]!.content.matchAll(CALL_LINE)];
  const step = steps[messages.slice(at + 1).filter((m) => m.role === "assistant").length];
  if (!step) return undefined;
  const tool = tools.find((t) => t.function.name === step[1]);
  if (!tool) return `The tool ${step[1]} is not among the tools offered (${tools.map((t) => t.function.name).join(", ") || "none"}).`;
  const lastResult = messages.findLast((m) => m.role === "tool")?.content ?? "";
  return { tool, args: withResult(jsonObject(step[2]), lastResult) };
}

function withResult(args: Record<string, unknown> | undefined, result: string): Record<string, unknown> | undefined {
  if (!args) return undefined;
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? v.replaceAll("{{tool_result}}", result) : v]));
}

function jsonObject(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function answerText(format: unknown, topic: string, random: () => number): string {
  const opener = pick(OPENERS, random).replace("{topic}", topic);
  if (format === "json") return JSON.stringify({ answer: opener });
  if (typeof format === "object" && format !== null) return JSON.stringify(sampleValue(format as JsonSchema, "value"));
  const count = 2 + Math.floor(random() * 3);
  const pool = [...SENTENCES]; // drawn without replacement: no sentence twice
  const body = Array.from({ length: count }, () => pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return [opener, ...body].join(" ");
}

/** An object satisfying the schema: required properties, or all of them when none are listed. */
function sampleObject(schema: JsonSchema): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const names = schema.required ?? Object.keys(properties);
  return Object.fromEntries(names.map((name) => [name, sampleValue(properties[name] ?? {}, name)]));
}

/** A deterministic value for a JSON-schema node: const, default, enum, example, else by type. */
function sampleValue(node: JsonSchema | null, name: string): unknown {
  const schema = node ?? {};
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.examples?.length) return schema.examples[0];
  const alternative = (schema.anyOf ?? schema.oneOf)?.[0];
  if (alternative) return sampleValue(alternative, name);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "integer":
      return schema.minimum ?? 1;
    case "number":
      return schema.minimum ?? 1.5;
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return [sampleValue(schema.items ?? { type: "string" }, name)];
    case "object":
      return sampleObject(schema);
    default:
      return sampleString(schema.format, name);
  }
}

function sampleString(format: string | undefined, name: string): string {
  switch (format) {
    case "date":
      return "2025-01-01";
    case "date-time":
      return "2025-01-01T12:00:00Z";
    case "email":
      return "user@example.com";
    case "uri":
    case "url":
      return "https://example.com";
    default:
      return `example ${name.replace(/[_-]+/g, " ")}`;
  }
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

// mulberry32: tiny seeded PRNG, plenty for picking sentences (and for the bench's seeded workload).
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// FNV-1a: stable 32-bit ids for token pieces.
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
