// mlx_lm.server as a backend. Every surface decodes its request into an Ollama
// body and encodes Ollama lines back, so this module is the one translator MLX
// needs: the Ollama body goes out as an OpenAI chat completion, and the answer
// (SSE chunks, or one object) comes back as Ollama lines. A wall clock bounds
// each request from its slot to its last byte (seed 000's wedged-request guard).
import { argumentsText, parseArguments } from "../core/tool-arguments.ts";
import { NodeFailure } from "../errors.ts";
import { readLines } from "./lines.ts";
import { type OllamaCall, type OllamaChunk, type OllamaLine, describeFetchError, noMoreLines } from "./ollama.ts";

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

export interface MlxUsage {
  /** From the call to the last byte. */
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens mlx_lm took from its prompt cache. */
  cachedTokens: number;
}

export interface MlxCallOptions {
  kind: "chat" | "generate";
  /** The model name the lines carry ("mlx:<repo id>"). */
  servedAs: string;
  wallClockMs: number;
  idleMs: number;
  signal: AbortSignal;
  /** Called once, with the finished answer's token counts. */
  onUsage(usage: MlxUsage): void;
}

/** The OpenAI chat-completions body for an Ollama /api/chat or /api/generate body, or what mlx_lm cannot take. */
export function openAiBody(kind: "chat" | "generate", body: Json, model: string): Json | string {
  const source =
    kind === "chat"
      ? ((body.messages as Json[] | undefined) ?? [])
      : [...(typeof body.system === "string" && body.system ? [{ role: "system", content: body.system }] : []), { role: "user", content: body.prompt ?? "", images: body.images }];
  const messages: Json[] = [];
  for (const [i, m] of source.entries()) {
    if (Array.isArray(m.images) && m.images.length) {
      return `${kind === "chat" ? `messages[${i}].images` : "images"}: mlx_lm.server reads text only; send images to a vision model on Ollama`;
    }
    const message: Json = { role: m.role, content: m.content ?? "" };
    if (Array.isArray(m.tool_calls)) {
      message.tool_calls = (m.tool_calls as Json[]).map((call, j) => {
        const fn = call.function as Json;
        return { id: call.id ?? `call_${i}_${j}`, type: "function", function: { name: fn.name, arguments: argumentsText(fn.arguments) } };
      });
    }
    if (typeof m.tool_call_id === "string") message.tool_call_id = m.tool_call_id;
    if (typeof m.tool_name === "string") message.name = m.tool_name;
    messages.push(message);
  }
  const stream = body.stream !== false; // Ollama streams unless told not to
  const out: Json = { model, messages, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) };
  const options = (body.options as Json | undefined) ?? {};
  // Ollama's option names → mlx_lm's; -1 and 0 num_predict mean "no limit" to Ollama: mlx_lm's default then.
  if (typeof options.num_predict === "number" && options.num_predict > 0) out.max_tokens = options.num_predict;
  for (const [from, to] of [["temperature", "temperature"], ["top_p", "top_p"], ["top_k", "top_k"], ["min_p", "min_p"], ["seed", "seed"], ["stop", "stop"], ["repeat_penalty", "repetition_penalty"]]) {
    if (options[from!] !== undefined) out[to!] = options[from!];
  }
  if (Array.isArray(body.tools) && body.tools.length) out.tools = body.tools;
  if (typeof body.think === "boolean") out.chat_template_kwargs = { enable_thinking: body.think };
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
  const line = (json: OllamaChunk): OllamaLine => ({ raw: JSON.stringify(json), json });
  const translate = new Translation(opts, started);
  try {
    const res = await fetch(new URL("/v1/chat/completions", baseUrl), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: abort.signal,
    });
    if (!res.ok) {
      const text = await res.text();
      const message = errorText(text) ?? `HTTP ${res.status}`;
      if (res.status >= 500 || res.status === 404) throw new NodeFailure(message, res.status);
      cleanup();
      return { status: res.status, first: line({ error: message }), rest: noMoreLines(), cancel: () => {} };
    }
    const lines = request.stream ? translate.stream(readLines(res.body!.getReader(), opts.idleMs)) : translate.whole((await res.json()) as Json);
    const rest = (async function* () {
      try {
        for await (const l of lines) yield [l];
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
    throw new NodeFailure(describeFetchError(e, opts.wallClockMs), null);
  }
}

/** One answer's OpenAI chunks as Ollama lines: text and thinking as they come, tool calls and the totals at the end. */
class Translation {
  constructor(
    private readonly opts: MlxCallOptions,
    private readonly started: number,
  ) {}

  async *stream(sse: AsyncGenerator<string>): AsyncGenerator<OllamaLine> {
    // Tool calls arrive in pieces, by index: the name first, the arguments as text fragments.
    const calls: { id?: string; name: string; args: string }[] = [];
    let finish: string | null = null;
    let usage: Json | undefined;
    for await (const raw of sse) {
      if (!raw.startsWith("data:")) continue;
      const data = raw.slice(5).trim();
      if (data === "[DONE]") {
        if (calls.length) yield this.line({ content: "", toolCalls: calls.map((c) => ({ id: c.id, name: c.name, arguments: c.args })) });
        yield this.done(finish, usage);
        return;
      }
      let chunk: Json;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw new Error(`the MLX server sent an SSE event that is not JSON: ${data.slice(0, 80)}`);
      }
      if (chunk.error) throw new Error(`the MLX server failed mid-answer: ${errorText(JSON.stringify(chunk))}`);
      if (chunk.usage) usage = chunk.usage as Json;
      const choice = (chunk.choices as Json[] | undefined)?.[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason as string;
      const delta = (choice.delta as Json | undefined) ?? {};
      for (const piece of (delta.tool_calls as Json[] | undefined) ?? []) {
        const fn = (piece.function as Json | undefined) ?? {};
        const at = typeof piece.index === "number" ? piece.index : calls.length;
        calls[at] ??= { name: "", args: "" };
        if (typeof piece.id === "string") calls[at].id = piece.id;
        if (typeof fn.name === "string") calls[at].name += fn.name;
        if (typeof fn.arguments === "string") calls[at].args += fn.arguments;
      }
      const content = typeof delta.content === "string" ? delta.content : "";
      const thinking = reasoningOf(delta);
      if (content || thinking) yield this.line({ content, thinking });
    }
    // No [DONE]: the answer is incomplete, and the relay says so.
  }

  async *whole(body: Json): AsyncGenerator<OllamaLine> {
    const choice = (body.choices as Json[] | undefined)?.[0] ?? {};
    const message = (choice.message as Json | undefined) ?? {};
    const toolCalls = ((message.tool_calls as Json[] | undefined) ?? []).map((c) => {
      const fn = c.function as Json;
      return { id: c.id as string | undefined, name: fn.name as string, arguments: fn.arguments as string };
    });
    const text = { content: typeof message.content === "string" ? message.content : "", thinking: reasoningOf(message), toolCalls };
    yield this.done((choice.finish_reason as string | null) ?? null, body.usage as Json | undefined, text);
  }

  private line(text: { content: string; thinking?: string; toolCalls?: { id?: string; name: string; arguments: string }[] }, done = false): OllamaLine {
    const json: OllamaChunk = { model: this.opts.servedAs, created_at: new Date().toISOString() };
    const calls = text.toolCalls?.map((c) => ({ ...(c.id ? { id: c.id } : {}), function: { name: c.name, arguments: parseArguments(c.arguments) ?? c.arguments /* text that is not JSON stays text */ } }));
    if (this.opts.kind === "chat") {
      json.message = { role: "assistant", content: text.content, ...(text.thinking ? { thinking: text.thinking } : {}), ...(calls?.length ? { tool_calls: calls } : {}) };
    } else {
      json.response = text.content;
      if (text.thinking) json.thinking = text.thinking;
    }
    json.done = done;
    return { raw: JSON.stringify(json), json };
  }

  private done(finish: string | null, usage: Json | undefined, text: Parameters<Translation["line"]>[0] = { content: "" }): OllamaLine {
    const prompt = Number(usage?.prompt_tokens ?? 0);
    const completion = Number(usage?.completion_tokens ?? 0);
    const cached = Number((usage?.prompt_tokens_details as Json | undefined)?.cached_tokens ?? 0);
    const latencyMs = performance.now() - this.started;
    this.opts.onUsage({ latencyMs, promptTokens: prompt, completionTokens: completion, cachedTokens: cached });
    const line = this.line(text, true);
    // Ollama's closing fields; mlx_lm reports no timings, so the whole duration is herd's own measure.
    Object.assign(line.json, {
      done_reason: finish === "length" ? "length" : "stop",
      total_duration: Math.round(latencyMs * 1e6),
      prompt_eval_count: prompt,
      eval_count: completion,
    });
    return { raw: JSON.stringify(line.json), json: line.json };
  }
}

function reasoningOf(part: Json): string {
  const text = part.reasoning ?? part.reasoning_content;
  return typeof text === "string" ? text : "";
}

// mlx_lm's errors are {"error": "..."}; some are plain text.
function errorText(body: string): string | null {
  try {
    const error = (JSON.parse(body) as { error?: unknown }).error;
    if (typeof error === "string") return error;
    if (error && typeof (error as Json).message === "string") return (error as Json).message as string;
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 300) || null;
}
