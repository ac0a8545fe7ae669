// mlx_lm.server as a backend. The request's conversation goes out as an OpenAI
// chat completion; the answer (SSE
// chunks, or one object) comes back as Events (mlx-events.ts). A wall clock
// bounds each request from its slot to its last byte (seed 000's wedged-request guard).
import { type AnswerCap, AnswerTooLarge, responseJson, responseText } from "../core/capped-body.ts";
import type { Chunk } from "../core/events.ts";
import type { Conversation, Message } from "../core/conversation.ts";
import { replyCapOf } from "../core/request.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { type LineLimits, readLines } from "./lines.ts";
import { MlxEvents, type MlxUsage, errorText } from "./mlx-events.ts";
import { type OllamaCall, describeFetchError, noMoreChunks } from "./ollama.ts";
import { functionTool } from "./ollama-render.ts";

type Json = Record<string, unknown>;

/** The request ran past mlx.wallClockTimeoutMs; the message is the /compact hint the client gets. */
export class WallClockTimeout extends Error {
  constructor(ms: number) {
    super(
      `the MLX request ran past the wall-clock limit of ${ms} ms (mlx.wallClockTimeoutMs) from admission to last byte, and its slot was released. ` +
        "The prompt is likely too long for this model to finish in time: run /compact in Claude Code (or shorten the conversation) and resubmit.",
    );
  }
}

export interface MlxCallOptions {
  /** The model name the answer carries ("mlx:<repo id>"). */
  servedAs: string;
  wallClockMs: number;
  lines: LineLimits;
  /** How large an answer not streamed (or an error's) may be. */
  whole: AnswerCap;
  signal: AbortSignal;
  /** Called once, with the finished answer's token counts. */
  onUsage(usage: MlxUsage): void;
}

/** The context assumed for a model whose trained context its node could not read (no config.json found). */
export const UNKNOWN_CONTEXT = 32768;

/**
 * The reply's cap for a server: the client's own; with none (Ollama's -1, 0, -2 too), the room the prompt leaves
 * in the model's context, as Ollama stops only at the context's end: never mlx_lm's --max-tokens default (512).
 */
export function maxTokens(req: Pick<Conversation, "options"> & { promptTokens: number }, contextLength: number | null): number {
  const cap = replyCapOf(req);
  if (cap !== null && cap > 0) return cap;
  return Math.max(1, (contextLength ?? UNKNOWN_CONTEXT) - req.promptTokens);
}

/** The OpenAI chat-completions body for a chat or generate request (its cap is maxTokens, per server), or what mlx_lm cannot take. */
export function openAiBody(kind: "chat" | "generate", req: Conversation & { stream: boolean }): Json | string {
  const source: Message[] =
    kind === "chat" ? (req.messages ?? []) : [...(req.system ? [{ role: "system", content: req.system }] : []), { role: "user", content: req.prompt ?? "", images: req.images }];
  const messages: Json[] = [];
  for (const [i, m] of source.entries()) {
    if (m.images?.length) return `${kind === "chat" ? `messages[${i}].images` : "images"}: mlx_lm.server reads text only; send images to a vision model on Ollama`;
    const message: Json = { role: m.role, content: m.content };
    if (m.toolCalls) {
      message.tool_calls = m.toolCalls.map((call, j) => ({ id: call.id ?? `call_${i}_${j}`, type: "function", function: { name: call.name, arguments: JSON.stringify(call.arguments) } }));
    }
    if (m.toolCallId !== undefined) message.tool_call_id = m.toolCallId;
    if (m.toolName !== undefined) message.name = m.toolName;
    messages.push(message);
  }
  const { stream, options } = req;
  // mlx_lm/server.py 0.32.0 ModelProvider: "default_model" is the one it was started with, however its --model was written (a path herd expanded).
  const out: Json = { model: "default_model", messages, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) };
  // Ollama's option names → mlx_lm's.
  for (const [from, to] of [["temperature", "temperature"], ["top_p", "top_p"], ["top_k", "top_k"], ["min_p", "min_p"], ["seed", "seed"], ["stop", "stop"], ["repeat_penalty", "repetition_penalty"]] as const) {
    if (options[from] !== undefined) out[to] = options[from];
  }
  if (req.tools.length) out.tools = req.tools.map(functionTool);
  if (typeof req.think === "boolean") out.chat_template_kwargs = { enable_thinking: req.think };
  return out;
}

/**
 * POSTs the request to an MLX server and waits for the first line. Failures before it (refused, 5xx, a server
 * without the model) are NodeFailures, so another server can be tried; running out of wall clock first is a
 * WallClockTimeout, which is never retried. A 4xx about the request comes back as a call the client sees.
 */
export async function callMlx(baseUrl: string, request: Json, opts: MlxCallOptions): Promise<OllamaCall> {
  const started = performance.now();
  const abort = new AbortController();
  const onClientGone = () => abort.abort(opts.signal.reason);
  opts.signal.addEventListener("abort", onClientGone, { once: true });
  const wallClock = setTimeout(() => abort.abort(new WallClockTimeout(opts.wallClockMs)), opts.wallClockMs);
  const cleanup = () => {
    clearTimeout(wallClock);
    opts.signal.removeEventListener("abort", onClientGone);
  };
  const parse = new MlxEvents(opts.servedAs, started, opts.onUsage);
  try {
    const res = await fetch(new URL("/v1/chat/completions", baseUrl), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: abort.signal,
    });
    if (!res.ok) {
      const text = await responseText(res, opts.whole);
      const message = errorText(text) ?? `HTTP ${res.status}`;
      if (res.status >= 500 || res.status === 404) throw new NodeFailure(message, res.status);
      cleanup();
      return { status: res.status, first: { events: [{ type: "error", message }] }, rest: noMoreChunks(), cancel: () => {} };
    }
    const chunks = request.stream ? parse.stream(readLines(res.body!.getReader(), opts.lines)) : wholeAnswer(parse, (await responseJson(res, opts.whole)) as Json);
    const rest = (async function* () {
      try {
        for await (const chunk of chunks) yield [chunk];
      } catch (e) {
        // The wall clock (or the client) ended the read: say which, not the fetch's generic abort.
        throw abort.signal.reason instanceof WallClockTimeout ? abort.signal.reason : e;
      } finally {
        cleanup();
      }
    })();
    const first = await rest.next();
    if (first.done) throw new NodeFailure(`empty response (HTTP ${res.status})`, res.status);
    return { status: res.status, first: first.value[0]!, rest, cancel: () => abort.abort() };
  } catch (e) {
    cleanup();
    abort.abort();
    if (e instanceof NodeFailure || e instanceof WallClockTimeout) throw e;
    if (abort.signal.reason instanceof WallClockTimeout) throw abort.signal.reason;
    if (opts.signal.aborted) throw e;
    if (e instanceof AnswerTooLarge) throw new RouteError(502, e.message);
    throw new NodeFailure(describeFetchError(e, opts.wallClockMs), null);
  }
}

/** A whole completion as the one chunk of its answer. */
async function* wholeAnswer(parse: MlxEvents, body: Json): AsyncGenerator<Chunk> {
  yield parse.whole(body);
}
