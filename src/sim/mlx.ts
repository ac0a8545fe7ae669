// A simulated mlx_lm.server: one model per server, OpenAI wire format as
// mlx_lm emits it (Python json.dumps bytes, uuid ids, its usage fields) and a
// prompt cache that reports reused prefix tokens as usage.prompt_tokens_details.
import { randomUUID } from "node:crypto";
import { pyJson } from "./encoding.ts";
import type { Faults } from "./faults.ts";
import { loadFailure, repositoryNotFound } from "./mlx-load.ts";
import { DEFAULT_MLX_LM_VERSION, MLX_OF, type MlxLmVersion } from "./mlx-versions.ts";
import { commonPrefix } from "./prompt-cache.ts";
import { parseMessages, parseTools, promptTokenIds, reply, replyTokenIds, tokenIds, type ChatMessage } from "./replies.ts";
import { serveSim, silentDrop, silentTokens, untilAborted, type Backend, type Frame, type RequestContext, type SimServer } from "./server.ts";

export interface SimMlxOptions {
  id: string;
  /** The mlx-lm release to behave as; default DEFAULT_MLX_LM_VERSION. */
  version?: MlxLmVersion;
  /** The model the server was started with, e.g. "mlx-community/Qwen3-8B-4bit". */
  model: string;
  port?: number;
  host?: string;
  /** --max-tokens: the cap on a reply that sets none (default 512). */
  maxTokens?: number;
  /** --prompt-cache-size: how many token sequences the prompt cache keeps (default 10). */
  promptCacheSize?: number;
  /** --prefill-step-size: prompt tokens processed per step, one keepalive each (default 2048). */
  prefillStepSize?: number;
  /** The model's load: completions wait for it, and a failed one leaves them waiting for ever. Default: loaded. */
  loaded?: Promise<void>;
  tokensPerSecond?: number;
  faults?: Faults;
}

/** BaseHTTPRequestHandler's Server header (server_version, then sys_version); the Python release is one mlx-lm runs on. */
const PYTHON_SERVER = "BaseHTTP/0.6 Python/3.12.8";
const METAL_OOM =
  "[metal::malloc] Attempting to allocate 34359738368 bytes which is greater than the maximum allowed buffer size of 28991029248 bytes.";

export function startMlxServer(opts: SimMlxOptions): SimServer {
  const { model } = opts;
  const version = opts.version ?? DEFAULT_MLX_LM_VERSION;
  // mlx_lm/server.py 0.32.0 get_system_fingerprint: f"{__version__}-{mx.__version__}-{platform.platform()}-{gpu_arch}".
  const fingerprint = `${version}-${MLX_OF[version]}-macOS-15.6.1-arm64-arm-64bit-applegpu_g15s`;
  // mlx_lm/server.py 0.32.0 main(): --max-tokens 512 and --prompt-cache-size 10 by default.
  const defaultMaxTokens = opts.maxTokens ?? 512;
  const promptCacheSize = opts.promptCacheSize ?? 10;
  const prefillStepSize = opts.prefillStepSize ?? 2048;
  // A request's wait for the model: false once its load has failed.
  const ready = (opts.loaded ?? Promise.resolve()).then(() => true, () => false);
  const thinks = /qwen3|gpt-oss|deepseek-r1/i.test(model);
  // Token sequences (prompt + generated) of recent requests, most recent last.
  const promptCache: number[][] = [];

  function cachedPrefix(prompt: number[]): number {
    return Math.max(0, ...promptCache.map((seq) => commonPrefix(seq, prompt)));
  }

  function remember(seq: number[]) {
    promptCache.push(seq);
    if (promptCache.length > promptCacheSize) promptCache.shift();
  }

  async function complete(req: Request, ctx: RequestContext, kind: "chat" | "text"): Promise<Response> {
    const raw = await req.text();
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return json({ error: `Invalid JSON in request body: ${pythonDecodeError(raw)}` }, 400);
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return json({ error: "Request should be a JSON dictionary" }, 400);
    }
    const b = body as Record<string, unknown>;
    const stream = b.stream ?? false;
    const maxTokens = b.max_completion_tokens ?? b.max_tokens ?? defaultMaxTokens;
    // mlx_lm/server.py 0.32.0 validate_model_parameters raises from do_POST on these; http.server then closes the
    // connection without writing a response.
    const malformed =
      typeof stream !== "boolean" ||
      typeof maxTokens !== "number" ||
      !Number.isInteger(maxTokens) ||
      maxTokens < 0 ||
      (kind === "chat" ? !Array.isArray(b.messages) : typeof b.prompt !== "string");
    if (malformed) return silentDrop();
    ctx.count("completions");
    // mlx_lm/server.py 0.32.0 ResponseGenerator.generate: a request waits until the generation thread takes it,
    // after its load; a thread that died of its load never does, and the request gets no answer at all.
    if (!(await ready)) return untilAborted(ctx.signal);

    const requested = typeof b.model === "string" ? b.model : "default_model";
    // mlx_lm/server.py 0.32.0 _generate: a request for another model loads that one (here: none the hub has), and
    // handle_completion answers its exception as a 404 {"error": str(e)}.
    if (requested !== "default_model" && requested !== model) return json({ error: (loadFailure(requested) ?? repositoryNotFound(requested)).message }, 404);

    const messages: ChatMessage[] = kind === "chat" ? parseMessages(b.messages) : [{ role: "user", content: b.prompt as string }];
    const prompt = kind === "chat" ? promptTokenIds(messages) : tokenIds(b.prompt as string);
    const cached = cachedPrefix(prompt);
    if (cached > 0) ctx.count("promptCacheHits");
    ctx.count("cachedPromptTokens", cached);
    // Prompt processing: the uncached tokens, at ten times the generation rate.
    const uncached = Math.max(1, prompt.length - cached);
    const prefillMs = (uncached * ctx.tokenIntervalMs) / 10;
    if (!stream) await ctx.sleep(prefillMs);

    const tools = kind === "chat" ? parseTools(b.tools) : undefined;
    const templateArgs = b.chat_template_kwargs as { enable_thinking?: unknown } | undefined;
    const r = reply({
      model,
      messages,
      think: kind === "chat" && thinks && templateArgs?.enable_thinking !== false,
      tools,
      maxTokens,
    });
    const id = kind === "chat" ? `chatcmpl-${randomUUID()}` : `cmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const object = kind === "text" ? "text_completion" : stream ? "chat.completion.chunk" : "chat.completion";
    const finishReason = r.truncated ? "length" : r.toolCall ? "tool_calls" : "stop";
    const toolCalls = r.toolCall && [
      {
        function: { name: r.toolCall.name, arguments: pyJson(r.toolCall.arguments, false) },
        type: "function",
        id: randomUUID(),
        ...(stream ? { index: 0 } : {}),
      },
    ];
    const usage = {
      prompt_tokens: prompt.length,
      completion_tokens: r.evalCount,
      total_tokens: prompt.length + r.evalCount,
      prompt_tokens_details: { cached_tokens: cached },
    };

    // mlx_lm/server.py 0.32.0 generate_response: static fields, then the choice; empty parts are left out.
    const packet = (text: string, finish: string | null, extra: { reasoning?: string; tool_calls?: unknown[] } = {}) => {
      const choice: Record<string, unknown> = { index: 0, finish_reason: finish };
      if (kind === "text") choice.text = text;
      else {
        const message: Record<string, unknown> = { role: "assistant" };
        // mlx_lm/server.py 0.32.0 generate_response: a whole message's content is null when empty (0.31.2 left it out); a delta's, left out.
        if (text) message.content = text;
        else if (!stream && version !== "0.31.2") message.content = null;
        if (extra.reasoning) message.reasoning = extra.reasoning;
        if (extra.tool_calls?.length) message.tool_calls = extra.tool_calls;
        choice[stream ? "delta" : "message"] = message;
      }
      return { id, system_fingerprint: fingerprint, object, model: requested, created, choices: [choice] };
    };
    const sse = (value: unknown) => `data: ${pyJson(value)}\n\n`;

    // A whole answer is written at once, with its length (mlx_lm/server.py 0.32.0 handle_completion sends Content-Length for it alone).
    const whole = stream ? null : pyJson({ ...packet(r.content.join(""), finishReason, { reasoning: r.thinking.join(""), tool_calls: toolCalls }), usage });

    async function* frames(): AsyncGenerator<Frame> {
      if (stream) yield* keepalives(uncached, prefillStepSize, prefillMs);
      for (const t of r.thinking) yield { token: true, data: stream ? sse(packet("", null, { reasoning: t })) : undefined };
      for (const t of r.content) yield { token: true, data: stream ? sse(packet(t, null)) : undefined };
      yield* silentTokens(r.callTokens);
      remember([...prompt, ...replyTokenIds(r)]);
      if (whole !== null) {
        yield { tail: true, data: whole };
        return;
      }
      yield { tail: true, data: sse(packet("", finishReason, { tool_calls: toolCalls })) };
      if ((b.stream_options as { include_usage?: unknown } | undefined)?.include_usage) {
        // mlx_lm/server.py 0.32.0 completion_usage_response labels it "chat.completion", even for text completions.
        const head = { id, system_fingerprint: fingerprint, object: "chat.completion", model: requested, created };
        yield { tail: true, data: sse({ ...head, choices: [], usage }) };
      }
      yield { tail: true, data: "data: [DONE]\n\n" };
    }
    const headers: Record<string, string> =
      whole === null ? { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" } : { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(whole)) };
    return ctx.stream(frames(), { ...CORS, ...headers });
  }

  const backend: Backend = {
    async handle(req, ctx) {
      const path = ctx.url.pathname;
      if (req.method === "OPTIONS") return new Response(null, { status: 204, headers: { ...CORS, "Content-Type": "application/json" } });
      if (req.method === "GET") {
        if (path === "/health") return json({ status: "ok" });
        if (path.startsWith("/v1/models")) {
          // mlx_lm/server.py 0.32.0 handle_models_request lists the MLX repos of the hub cache (and --model's path),
          // /v1/models/<repo id> only that one: the sim's cache holds its one model, loaded or not.
          const filter = path.split("/").slice(3).join("/");
          const data = !filter || filter === model ? [{ id: model, object: "model", created: Math.floor(Date.now() / 1000) }] : [];
          return json({ object: "list", data });
        }
        return notFound();
      }
      if (req.method === "POST") {
        if (path === "/v1/completions") return complete(req, ctx, "text");
        if (path === "/v1/chat/completions" || path === "/chat/completions") return complete(req, ctx, "chat");
        return notFound();
      }
      return new Response(`Unsupported method ('${req.method}')`, { status: 501, headers: { "Content-Type": "text/html;charset=utf-8" } });
    },
    error500: () => json({ error: METAL_OOM }, 500),
    state: () => ({ model, promptCache: { sequences: promptCache.length } }),
    patchKeys: [],
    patch: () => {},
  };

  // mlx_lm/server.py 0.32.0 serves with http.server's ThreadingHTTPServer and BaseHTTPRequestHandler (HTTP/1.0).
  return serveSim({ ...opts, kind: "mlx", backend, python: { server: PYTHON_SERVER } });
}

/**
 * mlx_lm/server.py 0.32.0 handle_completion writes ": keepalive {processed}/{total}" to a stream at each report of
 * the prompt's progress: mlx_lm/generate.py 0.32.0 generate_step reports 0 first, then after each prefill step
 * (all but the last token), then the whole once the first token is out. Its continuous batching reports at its
 * own steps, ending the same way.
 */
function* keepalives(total: number, step: number, prefillMs: number): Generator<Frame> {
  const at = [0];
  while (total - at.at(-1)! > 1) at.push(at.at(-1)! + Math.min(step, total - at.at(-1)! - 1));
  at.push(total);
  for (const [i, processed] of at.entries()) {
    yield { data: `: keepalive ${processed}/${total}\n\n`, delayMs: i ? (prefillMs * (processed - at[i - 1]!)) / total : 0 };
  }
}

// mlx_lm/server.py 0.32.0 _set_cors_headers, with --allowed-origins' default "*".
const CORS = { "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "*", "Access-Control-Allow-Headers": "*" };

function json(value: unknown, status = 200): Response {
  return new Response(pyJson(value), { status, headers: { ...CORS, "Content-Type": "application/json" } });
}

// mlx_lm/server.py 0.32.0 do_GET and do_POST answer unknown paths with a JSON content type and a plain-text body.
function notFound(): Response {
  return new Response("Not Found", { status: 404, headers: { ...CORS, "Content-Type": "application/json" } });
}

// Python's json.JSONDecodeError wording for the two common cases.
function pythonDecodeError(raw: string): string {
  const at = raw.length - raw.trimStart().length;
  const first = raw[at];
  if (first === undefined || !/[{["\-\dtfnNI]/.test(first)) return `Expecting value: line 1 column ${at + 1} (char ${at})`;
  return `Expecting ',' delimiter: line 1 column ${raw.length + 1} (char ${raw.length})`;
}
