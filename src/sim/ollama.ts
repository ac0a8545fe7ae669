// A simulated Ollama server: the native /api routes and the OpenAI-compatible
// /v1 routes, byte-compatible with Ollama's Go encoder, with model residency
// (load on demand, LRU eviction under a memory budget, keep_alive expiry).
import { goJson, rfc3339Nano } from "./encoding.ts";
import type { Faults } from "./faults.ts";
import {
  catalogSpec,
  details,
  digest,
  embedding,
  loadedBytes,
  normalizeName,
  sizeBytes,
  specFor,
  type SimModelSpec,
} from "./models.ts";
import {
  parseMessages,
  parseTools,
  promptTokenIds,
  reply,
  tokenIds,
  type ChatMessage,
  type JsonSchema,
  type Reply,
  type ToolSpec,
} from "./replies.ts";
import { serveSim, silentTokens, type Backend, type Frame, type RequestContext, type SimServer } from "./server.ts";

const OLLAMA_VERSION = "0.13.5";

export interface SimNodeOptions {
  id: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 (default) picks an ephemeral port. */
  port?: number;
  /** Models on disk. Default ["llama3.2:3b"]. */
  models?: string[] | SimModelSpec[];
  /** Models resident at start (must be on disk). */
  loaded?: string[];
  /** Memory available for loaded models. Default 64. */
  memoryGb?: number;
  /** Default 400: keeps tests fast. */
  tokensPerSecond?: number;
  /** Time to load a model that is on disk but not resident. Default 20. */
  loadTimeMs?: number;
  faults?: Faults;
}

const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;
const RUNNER_CRASHED =
  "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details";

/** An error Ollama reports as {"error": message} with this status. */
class OllamaError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface DiskModel {
  spec: SimModelSpec;
  modifiedAt: number;
}

interface Resident {
  spec: SimModelSpec;
  bytes: number;
  numCtx: number;
  inFlight: number;
  lastUsed: number;
  expiresAt: number;
  ready: Promise<unknown>;
}

interface Timing {
  began: number;
  loaded: number;
  prompted: number;
}

type Handler = (req: Request, ctx: RequestContext) => Promise<Response>;

export function startOllamaServer(opts: SimNodeOptions): SimServer {
  const memoryBytes = (opts.memoryGb ?? 64) * 2 ** 30;
  const loadTimeMs = opts.loadTimeMs ?? 20;
  // Specs given at start or through /_sim, so a model keeps its spec when re-listed or re-pulled.
  const registry = new Map<string, SimModelSpec>();
  const disk = new Map<string, DiskModel>();
  const resident = new Map<string, Resident>();

  setModels(opts.models ?? ["llama3.2:3b"]);
  setLoaded(opts.loaded ?? []);

  // ---- residency -------------------------------------------------------

  function setModels(models: readonly (string | SimModelSpec)[]) {
    const specs = models.map((m) => {
      if (typeof m === "string") return registry.get(normalizeName(m)) ?? specFor(m);
      if (typeof m?.name !== "string") throw new Error("a model spec needs a name");
      return { ...specFor(m.name), ...m, name: normalizeName(m.name) }; // unspecified fields are guessed
    });
    disk.clear();
    specs.forEach((spec, i) => {
      registry.set(spec.name, spec);
      // Stable, staggered dates so /api/tags ordering is deterministic.
      disk.set(spec.name, { spec, modifiedAt: Date.UTC(2025, 5, 1) - i * 86_400_000 });
    });
    for (const name of resident.keys()) if (!disk.has(name)) resident.delete(name);
  }

  function setLoaded(names: readonly string[]) {
    const specs = names.map((n) => {
      const model = disk.get(normalizeName(n));
      if (!model) throw new Error(`cannot load "${n}": not on disk`);
      return model.spec;
    });
    const total = specs.reduce((sum, s) => sum + loadedBytes(s), 0);
    if (total > memoryBytes) throw new Error(`loaded models need ${gib(total)} GiB, memory is ${gib(memoryBytes)} GiB`);
    resident.clear();
    for (const spec of specs) resident.set(spec.name, newResident(spec, defaultNumCtx(spec), Promise.resolve()));
  }

  function newResident(spec: SimModelSpec, numCtx: number, ready: Promise<unknown>): Resident {
    const now = Date.now();
    return { spec, bytes: loadedBytes(spec), numCtx, inFlight: 0, lastUsed: now, expiresAt: now + DEFAULT_KEEP_ALIVE_MS, ready };
  }

  function expireIdle() {
    const now = Date.now();
    for (const [name, r] of resident) if (r.inFlight === 0 && r.expiresAt <= now) resident.delete(name);
  }

  const usedBytes = () => [...resident.values()].reduce((sum, r) => sum + r.bytes, 0);

  // Claims a runner for the request, loading the model first if needed.
  // Like Ollama's scheduler it evicts idle models least-recently-used first
  // and waits while busy models hold the memory it needs.
  async function acquire(spec: SimModelSpec, numCtx: number, ctx: RequestContext): Promise<Resident> {
    for (;;) {
      expireIdle();
      const r = resident.get(spec.name) ?? reserve(spec, numCtx, ctx);
      if (r) {
        r.inFlight++;
        r.lastUsed = Date.now();
        await r.ready;
        return r;
      }
      await ctx.sleep(10);
    }
  }

  function reserve(spec: SimModelSpec, numCtx: number, ctx: RequestContext): Resident | undefined {
    const bytes = loadedBytes(spec);
    if (bytes > memoryBytes) {
      throw new OllamaError(500, `model requires more system memory (${gib(bytes)} GiB) than is available (${gib(memoryBytes)} GiB)`);
    }
    while (usedBytes() + bytes > memoryBytes) {
      const idle = [...resident.values()].filter((r) => r.inFlight === 0);
      if (idle.length === 0) return undefined;
      const victim = idle.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b));
      resident.delete(victim.spec.name);
      ctx.count("evictions");
    }
    ctx.count("loads");
    const r = newResident(spec, numCtx, Bun.sleep(loadTimeMs));
    resident.set(spec.name, r);
    return r;
  }

  function release(r: Resident, keepAliveMs: number) {
    r.inFlight--;
    r.lastUsed = Date.now();
    r.expiresAt = r.lastUsed + keepAliveMs;
    if (keepAliveMs === 0 && r.inFlight === 0 && resident.get(r.spec.name) === r) resident.delete(r.spec.name);
  }

  // A model on disk, or Ollama's 404 naming the model as the client spelled it.
  function onDisk(model: string): SimModelSpec {
    const found = disk.get(normalizeName(model));
    if (!model || !found) throw new OllamaError(404, `model '${model}' not found`);
    return found.spec;
  }

  // ---- routes ------------------------------------------------------------

  const running: Handler = async () => text("Ollama is running");

  const routes: Record<string, Record<string, Handler>> = {
    "/": { GET: running, HEAD: running },
    "/api/version": { GET: version, HEAD: version },
    "/api/tags": { GET: tags, HEAD: tags },
    "/api/ps": { GET: ps },
    "/api/show": { POST: show },
    "/api/chat": { POST: chat },
    "/api/generate": { POST: generate },
    "/api/embed": { POST: embed },
    "/api/embeddings": { POST: embeddings },
    "/api/pull": { POST: pull },
    "/api/delete": { DELETE: remove },
    "/v1/chat/completions": { POST: openaiChat },
    "/v1/models": { GET: openaiModels },
  };

  async function version(): Promise<Response> {
    return json({ version: OLLAMA_VERSION });
  }

  async function tags(): Promise<Response> {
    const models = [...disk.values()]
      .sort((a, b) => b.modifiedAt - a.modifiedAt)
      .map(({ spec, modifiedAt }) => ({
        name: spec.name,
        model: spec.name,
        modified_at: rfc3339Nano(modifiedAt),
        size: sizeBytes(spec),
        digest: digest(spec.name),
        details: details(spec),
      }));
    return json({ models });
  }

  async function ps(): Promise<Response> {
    expireIdle();
    const models = [...resident.values()]
      .sort((a, b) => b.expiresAt - a.expiresAt)
      .map((r) => ({
        name: r.spec.name,
        model: r.spec.name,
        size: r.bytes,
        digest: digest(r.spec.name),
        details: details(r.spec),
        expires_at: rfc3339Nano(Math.min(r.expiresAt, FOREVER())),
        size_vram: r.bytes, // unified memory: everything is on the GPU
        context_length: r.numCtx,
      }));
    return json({ models });
  }

  async function show(req: Request): Promise<Response> {
    const body = await readBody(req, "ShowRequest");
    const model = str(body.model) || str(body.name);
    if (!model) throw new OllamaError(400, "model is required");
    const spec = onDisk(model);
    const fam = spec.family;
    // Go sorts map keys when it marshals model_info.
    const modelInfo = Object.fromEntries(
      Object.entries({
        "general.architecture": fam,
        "general.parameter_count": spec.parameters,
        "general.quantization_version": 2,
        [`${fam}.context_length`]: spec.contextLength,
        [`${fam}.embedding_length`]: spec.embeddingLength,
      }).sort(([a], [b]) => (a < b ? -1 : 1)),
    );
    return json({
      modelfile:
        `# Modelfile generated by "ollama show"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM ${spec.name}\n\n` +
        `FROM /Users/sim/.ollama/models/blobs/sha256-${digest(spec.name, "model")}\nTEMPLATE """{{ .Prompt }}"""\n`,
      template: "{{ .Prompt }}",
      details: details(spec),
      model_info: modelInfo,
      capabilities: spec.capabilities,
      modified_at: rfc3339Nano(disk.get(spec.name)!.modifiedAt),
    });
  }

  async function chat(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "ChatRequest");
    const model = str(body.model);
    if (!model) throw new OllamaError(400, "model is required");
    const spec = onDisk(model);
    const messages = parseMessages(body.messages);
    const keepAlive = keepAliveMs(body.keep_alive);
    if (messages.length === 0) return loadOrUnload(spec, model, keepAlive, ctx, { message: { role: "assistant", content: "" } });
    const tools = parseTools(body.tools);
    const run = await start(spec, model, "chat", body, messages, tools, ctx);
    const r = reply({ model: spec.name, messages, think: run.think, format: body.format, tools, maxTokens: run.maxTokens });
    const message = (content: string, thinking = "", toolCalls?: unknown[]) => ({
      role: "assistant",
      content,
      thinking: thinking || undefined,
      tool_calls: toolCalls,
    });
    const call = r.toolCall && [
      { id: r.toolCall.id, function: { index: 0, name: r.toolCall.name, arguments: r.toolCall.arguments } },
    ];
    return respond(run, r, keepAlive, body.stream !== false, ctx, {
      thinking: (t) => ({ message: message("", t) }),
      content: (t) => ({ message: message(t) }),
      toolCall: call && (() => ({ message: message("", "", call) })),
      final: (whole) => ({ message: whole ? message(r.content.join(""), r.thinking.join(""), call) : message("") }),
    });
  }

  async function generate(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "GenerateRequest");
    const model = str(body.model);
    const spec = onDisk(model);
    const prompt = str(body.prompt);
    const keepAlive = keepAliveMs(body.keep_alive);
    if (!prompt) return loadOrUnload(spec, model, keepAlive, ctx, { response: "" });
    const messages: ChatMessage[] = [...(body.system ? [{ role: "system", content: str(body.system) }] : []), { role: "user", content: prompt }];
    const run = await start(spec, model, "generate", body, messages, [], ctx);
    const r = reply({ model: spec.name, messages, think: run.think, format: body.format, maxTokens: run.maxTokens });
    // `context` encodes prompt + answer so a client can continue; raw mode has none.
    const context = body.raw === true ? undefined : [...promptTokenIds(messages), ...tokenIds(r.content.join(""))];
    return respond(run, r, keepAlive, body.stream !== false, ctx, {
      thinking: (t) => ({ response: "", thinking: t }),
      content: (t) => ({ response: t }),
      final: (whole) => ({ response: whole ? r.content.join("") : "", thinking: whole ? r.thinking.join("") || undefined : undefined }),
      context,
    });
  }

  async function embed(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "EmbedRequest");
    const input = body.input;
    const inputs = typeof input === "string" ? (input ? [input] : []) : Array.isArray(input) ? input : [];
    if ((input !== undefined && input !== null && typeof input !== "string" && !Array.isArray(input)) || inputs.some((i) => typeof i !== "string")) {
      throw new OllamaError(400, "invalid input type");
    }
    const model = str(body.model);
    const spec = onDisk(model);
    const began = performance.now();
    const r = await acquire(spec, defaultNumCtx(spec), ctx);
    const loaded = performance.now();
    try {
      if (inputs.length === 0) return json({ model, embeddings: [] });
      const tokens = inputs.reduce((sum, text) => sum + tokenIds(text as string).length, 0);
      await ctx.sleep(promptEvalMs(tokens, ctx));
      const dims = typeof body.dimensions === "number" && body.dimensions > 0 ? Math.min(body.dimensions, spec.embeddingLength) : undefined;
      return json({
        model,
        embeddings: inputs.map((text) => embedding(spec, text as string, dims)),
        total_duration: ns(performance.now() - began),
        load_duration: ns(loaded - began),
        prompt_eval_count: tokens,
      });
    } finally {
      release(r, keepAliveMs(body.keep_alive));
    }
  }

  // Legacy endpoint: one prompt, one unnormalised float64 vector.
  async function embeddings(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "EmbeddingRequest");
    const model = str(body.model);
    if (!model) throw new OllamaError(400, "model is required");
    const found = disk.get(normalizeName(model));
    // This route reaches the scheduler before any lookup, hence the older wording.
    if (!found) throw new OllamaError(404, `model "${model}" not found, try pulling it first`);
    const r = await acquire(found.spec, defaultNumCtx(found.spec), ctx);
    try {
      const prompt = str(body.prompt);
      if (!prompt) return json({ embedding: [] });
      await ctx.sleep(promptEvalMs(tokenIds(prompt).length, ctx));
      const scale = Math.sqrt(found.spec.embeddingLength);
      return json({ embedding: embedding(found.spec, prompt).map((v) => v * scale) });
    } finally {
      release(r, keepAliveMs(body.keep_alive));
    }
  }

  async function pull(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "PullRequest");
    const model = str(body.model) || str(body.name);
    if (!model) throw new OllamaError(400, "invalid model name");
    const spec = registry.get(normalizeName(model)) ?? catalogSpec(model);
    const cached = spec !== undefined && disk.has(spec.name);
    const line = (value: unknown) => `${goJson(value)}\n`;

    type Progress = { status?: string; error?: string; digest?: string; total?: number; completed?: number; delayMs?: number };
    function* progress(): Generator<Progress> {
      yield { status: "pulling manifest" };
      if (!spec) {
        yield { error: "pull model manifest: file does not exist" };
        return;
      }
      for (const layer of layers(spec)) {
        const steps = cached || layer.size < 1_000_000 ? [1] : [0, 0.25, 0.5, 0.75, 1];
        for (const step of steps) {
          const completed = Math.round(layer.size * step);
          yield {
            status: `pulling ${layer.digest.slice(7, 19)}`,
            digest: layer.digest,
            total: layer.size,
            completed: completed || undefined, // Go omits a zero count
            delayMs: 10,
          };
        }
      }
      yield { status: "verifying sha256 digest" };
      yield { status: "writing manifest" };
      disk.set(spec.name, { spec, modifiedAt: Date.now() });
      ctx.count("pulls");
      yield { status: "success" };
    }

    const frames = async function* (): AsyncGenerator<Frame> {
      let last: Record<string, unknown> = {};
      for (const { delayMs, ...event } of progress()) {
        last = event;
        if (body.stream !== false) yield { data: line(event), delayMs };
        else if (delayMs) yield { delayMs };
      }
      if (body.stream === false) yield { data: goJson(last) };
    };
    if (body.stream === false && !spec) throw new OllamaError(500, "pull model manifest: file does not exist");
    return ctx.stream(frames(), { "Content-Type": body.stream === false ? JSON_TYPE : NDJSON_TYPE });
  }

  async function remove(req: Request): Promise<Response> {
    const body = await readBody(req, "DeleteRequest");
    const model = str(body.model) || str(body.name);
    if (!model) throw new OllamaError(400, `name "${model}" is invalid`);
    const spec = onDisk(model);
    disk.delete(spec.name);
    if (resident.get(spec.name)?.inFlight === 0) resident.delete(spec.name);
    return new Response(null, { status: 200 });
  }

  async function openaiChat(req: Request, ctx: RequestContext): Promise<Response> {
    const body = await readBody(req, "ChatCompletionRequest");
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      throw new OllamaError(400, "[] is too short - 'messages'");
    }
    const model = str(body.model);
    if (!model) throw new OllamaError(400, "model is required");
    const spec = onDisk(model);
    const messages = parseMessages(body.messages);
    const tools = parseTools(body.tools);
    const effort = str(body.reasoning_effort) || str((body.reasoning as { effort?: unknown } | undefined)?.effort);
    const translated = {
      options: { num_predict: body.max_tokens }, // Ollama reads max_tokens only
      think: effort ? effort !== "none" : undefined,
    };
    const run = await start(spec, model, "chat", translated, messages, tools, ctx);
    const r = reply({ model: spec.name, messages, think: run.think, format: responseFormat(body.response_format), tools, maxTokens: run.maxTokens });
    const id = `chatcmpl-${Math.floor(Math.random() * 999)}`;
    const created = Math.floor(Date.now() / 1000);
    const call = r.toolCall && [
      { id: r.toolCall.id, index: 0, type: "function", function: { name: r.toolCall.name, arguments: goJson(r.toolCall.arguments) } },
    ];
    const finishReason = call ? "tool_calls" : r.truncated ? "length" : "stop";
    const usage = () => ({ prompt_tokens: run.promptTokens, completion_tokens: r.evalCount, total_tokens: run.promptTokens + r.evalCount });
    const head = { id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_ollama" };
    const sse = (value: unknown) => `data: ${goJson(value)}\n\n`;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      sse({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "", ...delta }, finish_reason: finish }] });
    const stream = body.stream === true;
    const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;

    async function* frames(): AsyncGenerator<Frame> {
      try {
        for (const t of r.thinking) yield { token: true, data: stream ? chunk({ reasoning: t }) : undefined };
        for (const t of r.content) yield { token: true, data: stream ? chunk({ content: t }) : undefined };
        yield* silentTokens(r.callTokens);
        if (call && stream) yield { data: chunk({ tool_calls: call }) };
        if (!stream) {
          const message = { role: "assistant", content: r.content.join(""), reasoning: r.thinking.join("") || undefined, tool_calls: call };
          const completion = { ...head, object: "chat.completion", created: Math.floor(Date.now() / 1000) };
          yield { tail: true, data: `${goJson({ ...completion, choices: [{ index: 0, message, finish_reason: finishReason }], usage: usage() })}\n` };
          return;
        }
        yield { tail: true, data: chunk({}, finishReason) };
        if (includeUsage) yield { tail: true, data: sse({ ...head, choices: [], usage: usage() }) };
        yield { tail: true, data: "data: [DONE]\n\n" };
      } finally {
        release(run.resident, DEFAULT_KEEP_ALIVE_MS);
      }
    }
    return ctx.stream(frames(), { "Content-Type": stream ? "text/event-stream" : "application/json" });
  }

  async function openaiModels(): Promise<Response> {
    const data = [...disk.values()]
      .sort((a, b) => b.modifiedAt - a.modifiedAt)
      .map(({ spec, modifiedAt }) => ({ id: spec.name, object: "model", created: Math.floor(modifiedAt / 1000), owned_by: "library" }));
    // Go marshals an empty (nil) slice as null.
    return new Response(`${goJson({ object: "list", data: data.length ? data : null })}\n`, { headers: { "Content-Type": "application/json" } });
  }

  // ---- shared generation plumbing -----------------------------------------

  interface Run {
    resident: Resident;
    model: string;
    think: boolean;
    maxTokens: number | undefined;
    promptTokens: number;
    timing: Timing;
  }

  // Checks capabilities, loads the model, and spends the prompt-evaluation
  // time before the first byte, so time-to-first-token looks real.
  async function start(
    spec: SimModelSpec,
    model: string,
    verb: "chat" | "generate",
    body: Record<string, unknown>,
    messages: ChatMessage[],
    tools: ToolSpec[],
    ctx: RequestContext,
  ): Promise<Run> {
    if (!spec.capabilities.includes("completion")) throw new OllamaError(400, `"${model}" does not support ${verb}`);
    if (tools.length > 0 && !spec.capabilities.includes("tools")) {
      throw new OllamaError(400, `${qualifiedName(spec.name)} does not support tools`);
    }
    const thinks = spec.capabilities.includes("thinking");
    if (body.think === true && !thinks) throw new OllamaError(400, `"${model}" does not support thinking`);
    if (typeof body.think === "string" && spec.family !== "gptoss") {
      throw new OllamaError(400, `think value "${body.think}" is not supported for this model`);
    }
    const options = (body.options ?? {}) as { num_predict?: unknown; num_ctx?: unknown };
    const numCtx = typeof options.num_ctx === "number" ? options.num_ctx : defaultNumCtx(spec);
    const timing: Timing = { began: performance.now(), loaded: 0, prompted: 0 };
    const r = await acquire(spec, numCtx, ctx);
    timing.loaded = performance.now();
    const promptTokens = promptTokenIds(messages).length;
    try {
      await ctx.sleep(promptEvalMs(promptTokens, ctx));
    } catch (e) {
      release(r, DEFAULT_KEEP_ALIVE_MS);
      throw e;
    }
    timing.prompted = performance.now();
    const maxTokens = typeof options.num_predict === "number" && options.num_predict >= 0 ? options.num_predict : undefined;
    return { resident: r, model, think: thinks && body.think !== false, maxTokens, promptTokens, timing };
  }

  interface Shape {
    thinking(token: string): Record<string, unknown>;
    content(token: string): Record<string, unknown>;
    toolCall?: () => Record<string, unknown>;
    /** The done object's own fields; `whole` when it carries the full reply (stream: false). */
    final(whole: boolean): Record<string, unknown>;
    /** /api/generate's token encoding of prompt + answer. */
    context?: number[];
  }

  // Native NDJSON streaming (or one object for stream:false) shared by chat and generate.
  function respond(run: Run, r: Reply, keepAlive: number, stream: boolean, ctx: RequestContext, shape: Shape): Response {
    const line = (fields: Record<string, unknown>) => goJson({ model: run.model, created_at: rfc3339Nano(), ...fields, done: false });
    async function* frames(): AsyncGenerator<Frame> {
      try {
        for (const t of r.thinking) yield { token: true, data: stream ? `${line(shape.thinking(t))}\n` : undefined };
        for (const t of r.content) yield { token: true, data: stream ? `${line(shape.content(t))}\n` : undefined };
        yield* silentTokens(r.callTokens);
        if (shape.toolCall && stream) yield { data: `${line(shape.toolCall())}\n` };
        const now = performance.now();
        const { began, loaded, prompted } = run.timing;
        const done = {
          model: run.model,
          created_at: rfc3339Nano(),
          ...shape.final(!stream),
          done: true,
          done_reason: r.truncated ? "length" : "stop",
          context: shape.context,
          ...omitZero({
            total_duration: ns(now - began),
            load_duration: ns(loaded - began),
            prompt_eval_count: run.promptTokens,
            prompt_eval_duration: ns(prompted - loaded),
            eval_count: r.evalCount,
            eval_duration: ns(now - prompted),
          }),
        };
        yield { tail: true, data: stream ? `${goJson(done)}\n` : goJson(done) };
      } finally {
        release(run.resident, keepAlive);
      }
    }
    return ctx.stream(frames(), { "Content-Type": stream ? NDJSON_TYPE : JSON_TYPE });
  }

  // An empty prompt loads the model (or, with keep_alive 0, unloads it).
  async function loadOrUnload(spec: SimModelSpec, model: string, keepAlive: number, ctx: RequestContext, fields: Record<string, unknown>) {
    const head = { model, created_at: rfc3339Nano(), ...fields, done: true };
    if (keepAlive === 0) {
      if (resident.get(spec.name)?.inFlight === 0) resident.delete(spec.name);
      return json({ ...head, done_reason: "unload" });
    }
    release(await acquire(spec, defaultNumCtx(spec), ctx), keepAlive);
    return json({ ...head, done_reason: "load" });
  }

  const backend: Backend = {
    async handle(req, ctx) {
      const methods = routes[ctx.url.pathname];
      if (!methods) return text("404 page not found", 404);
      const handler = methods[req.method];
      if (!handler) return text("405 method not allowed", 405);
      try {
        return await handler(req, ctx);
      } catch (e) {
        if (!(e instanceof OllamaError)) throw e;
        return ctx.url.pathname.startsWith("/v1/") ? openaiError(e.status, e.message) : json({ error: e.message }, e.status);
      }
    },
    error500: (url) => (url.pathname.startsWith("/v1/") ? openaiError(500, RUNNER_CRASHED) : json({ error: RUNNER_CRASHED }, 500)),
    state: () => {
      expireIdle();
      const loadedByAge = [...resident.values()].sort((a, b) => a.lastUsed - b.lastUsed);
      return {
        memoryGb: memoryBytes / 2 ** 30,
        usedGb: Number(gib(usedBytes())),
        models: [...disk.keys()],
        loaded: loadedByAge.map((r) => r.spec.name),
        inFlightByModel: Object.fromEntries(loadedByAge.filter((r) => r.inFlight > 0).map((r) => [r.spec.name, r.inFlight])),
      };
    },
    patchKeys: ["models", "loaded"],
    patch(body) {
      if ("models" in body && !Array.isArray(body.models)) throw new Error("models must be an array");
      if ("loaded" in body && !Array.isArray(body.loaded)) throw new Error("loaded must be an array");
      const before = { disk: new Map(disk), resident: new Map(resident) };
      try {
        if (body.models) setModels(body.models as (string | SimModelSpec)[]);
        if (body.loaded) setLoaded(body.loaded as string[]);
      } catch (e) {
        restore(disk, before.disk);
        restore(resident, before.resident);
        throw e;
      }
    },
  };

  return serveSim({ ...opts, kind: "ollama", backend });
}

// ---- helpers ---------------------------------------------------------------

const JSON_TYPE = "application/json; charset=utf-8";
const NDJSON_TYPE = "application/x-ndjson";

function json(value: unknown, status = 200): Response {
  return new Response(goJson(value), { status, headers: { "Content-Type": JSON_TYPE } });
}

function text(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "Content-Type": "text/plain; charset=utf-8" } });
}

// Ollama's OpenAI layer wraps errors; its encoder ends the body with "\n".
function openaiError(status: number, message: string): Response {
  const type = status === 400 ? "invalid_request_error" : status === 404 ? "not_found_error" : "api_error";
  const body = `${goJson({ error: { message, type, param: null, code: null } })}\n`;
  return new Response(body, { status, headers: { "Content-Type": "application/json" } });
}

// Parses a JSON body the way gin's ShouldBindJSON reports failures.
async function readBody(req: Request, goType: string): Promise<Record<string, unknown>> {
  const raw = await req.text();
  if (!raw.trim()) throw new OllamaError(400, "missing request body");
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    const first = raw.trimStart()[0]!;
    throw new OllamaError(400, /[{["\-\dtfn]/.test(first) ? "unexpected EOF" : `invalid character '${first}' looking for beginning of value`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const kind = Array.isArray(value) ? "array" : value === null ? "null" : typeof value === "boolean" ? "bool" : typeof value;
    if (kind !== "null") throw new OllamaError(400, `json: cannot unmarshal ${kind} into Go value of type api.${goType}`);
    return {};
  }
  return value as Record<string, unknown>;
}

function responseFormat(value: unknown): unknown {
  const rf = value as { type?: string; json_schema?: { schema?: JsonSchema } } | undefined;
  if (rf?.type === "json_object") return "json";
  if (rf?.type === "json_schema") return rf.json_schema?.schema ?? "json";
  return undefined;
}

// keep_alive: a number of seconds or a Go duration ("5m", "1h30m"); negative keeps forever.
function keepAliveMs(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_KEEP_ALIVE_MS;
  let ms: number | undefined;
  if (typeof value === "number") ms = value * 1000;
  else if (typeof value === "string") {
    const units: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const parts = [...value.matchAll(/(-?\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
    if (/^-?\d+(\.\d+)?$/.test(value)) ms = Number(value) * 1000;
    else if (parts.length && parts.map((p) => p[0]).join("") === value) ms = parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
  }
  if (ms === undefined || Number.isNaN(ms)) throw new OllamaError(400, `time: invalid duration "${String(value)}"`);
  return ms < 0 ? Infinity : ms;
}

// Ollama's default context, raised for models that need more to be useful.
function defaultNumCtx(spec: SimModelSpec): number {
  return spec.family === "gptoss" ? 8192 : Math.min(4096, spec.contextLength);
}

// Prompt processing runs roughly ten times faster than generation.
function promptEvalMs(tokens: number, ctx: RequestContext): number {
  return (tokens * ctx.tokenIntervalMs) / 10;
}

// Capability errors name the model by its fully qualified registry name.
function qualifiedName(name: string): string {
  const parts = name.split("/");
  return parts.length === 1 ? `registry.ollama.ai/library/${name}` : parts.length === 2 ? `registry.ollama.ai/${name}` : name;
}

// A model's manifest: weights, template, license, params, config.
function layers(spec: SimModelSpec): { digest: string; size: number }[] {
  const parts: [string, number][] = [["model", sizeBytes(spec)], ["template", 1429], ["license", 7711], ["params", 96], ["config", 561]];
  return parts.map(([kind, size]) => ({ digest: `sha256:${digest(spec.name, kind)}`, size }));
}

const ns = (ms: number) => Math.max(1, Math.round(ms * 1e6));
const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
const str = (value: unknown) => (typeof value === "string" ? value : "");
// Ollama's "forever" is now + max int64 nanoseconds (~292 years).
const FOREVER = () => Date.now() + 292 * 365.25 * 86_400_000;

function omitZero(fields: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== 0));
}

function restore<K, V>(target: Map<K, V>, saved: Map<K, V>) {
  target.clear();
  for (const [k, v] of saved) target.set(k, v);
}
