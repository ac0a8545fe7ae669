// Ollama as a backend: probing what a server holds (for the node agent and for
// agentless nodes) and calling it for a request, streaming its lines back.
import * as v from "valibot";
import { formatIssues } from "../config/problems.ts";
import { type AnswerCap, AnswerTooLarge, readCapped, responseJson } from "../core/capped-body.ts";
import { type Chunk, errorOf, figure } from "../core/events.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { claimHeld } from "../fleet/claimed-times.ts";
import type { OllamaSection } from "../fleet/heartbeat.ts";
import { modelList, psEntry, tagEntry, toGb, versionText } from "../fleet/node-models.ts";
import { type Answer, postJson } from "./http1.ts";
import { type LineLimits, readLineBatches } from "./lines.ts";
import { ollamaChunk } from "./ollama-events.ts";
import type { Keep } from "../fleet/preloader.ts";

const versionAnswer = v.object({ version: v.optional(versionText) });
const modelsAnswer = <S extends v.GenericSchema>(entry: S) => v.object({ models: v.optional(modelList(entry), []) });
const psAnswer = modelsAnswer(psEntry);
const tagsAnswer = modelsAnswer(tagEntry);

/** What an Ollama server holds right now, each model's entry whole; never throws: an unreachable server says why. */
export async function probeOllama(baseUrl: string, timeoutMs: number, cap: AnswerCap): Promise<OllamaSection> {
  const get = async <S extends v.GenericSchema>(path: string, schema: S): Promise<v.InferOutput<S>> => {
    const res = await fetch(new URL(path, baseUrl), { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`HTTP ${res.status} from ${path}`);
    const parsed = v.safeParse(schema, await responseJson(res, cap));
    if (!parsed.success) throw new Error(`unexpected answer from ${path}: ${formatIssues(parsed.issues, schema).join("; ")}`);
    return parsed.output;
  };
  try {
    const [version, ps, tags] = await Promise.all([get("/api/version", versionAnswer), get("/api/ps", psAnswer), get("/api/tags", tagsAnswer)]);
    return {
      reachable: true,
      error: null,
      version: version.version ?? null,
      requests_active: 0,
      // Seed 000's size_gb: what the model takes in memory, all of it on unified memory (size_vram is only the GPU's part).
      models_loaded: ps.models.map((m) => ({ ...m, size_gb: toGb(m.size || m.size_vram || 0) })),
      models_available: tags.models,
    };
  } catch (e) {
    return { reachable: false, error: describeFetchError(e, timeoutMs), version: null, requests_active: 0, models_loaded: [], models_available: [] };
  }
}

/** A fetch failure in words an operator can act on. */
export function describeFetchError(e: unknown, timeoutMs: number): string {
  const err = e as Error & { code?: string };
  if (err.name === "TimeoutError" || err.name === "AbortError") return `no answer within ${timeoutMs} ms`;
  if (err.code === "ConnectionRefused" || /refused/i.test(err.message)) return "connection refused";
  return err.message;
}

/** A node's answer under way (an Ollama node's, or an MLX server's). */
export interface OllamaCall {
  status: number;
  /** The first chunk, already read: the node has answered once this exists. */
  first: Chunk;
  /** The chunks that came in the same read as the first, already parsed: the relay sends them with it, in one write. */
  arrived?: Chunk[];
  /** The chunks after those, in the batches they arrived in. */
  rest: AsyncGenerator<Chunk[]>;
  cancel(): void;
}

/**
 * POSTs `body` to an Ollama node and waits for its first line. Anything that
 * goes wrong before that line (refused, 5xx, a node that no longer has the
 * model, silence past firstByteMs) is a NodeFailure, so the caller can retry elsewhere.
 * A 4xx about the request itself is returned as a call: the client should see it.
 */
export async function callOllama(
  baseUrl: string,
  path: string,
  body: string,
  opts: { firstByteMs: number; lines: LineLimits; whole: AnswerCap; signal: AbortSignal },
): Promise<OllamaCall> {
  // Aborted while it waited for its slot (the client left, herd is stopping): an abort listener would never fire.
  if (opts.signal.aborted) throw opts.signal.reason;
  const abort = new AbortController();
  const onClientGone = () => abort.abort(opts.signal.reason);
  opts.signal.addEventListener("abort", onClientGone, { once: true });
  const timer = setTimeout(() => abort.abort(new NodeFailure(`no answer within ${opts.firstByteMs} ms`, null)), opts.firstByteMs);
  try {
    const res = await postJson(nodeUrl(baseUrl, path), body, abort.signal);
    const { first, arrived, rest } = isStream(res) ? await streamed(res, opts.lines) : await whole(res, opts.whole);
    if (!first) throw new NodeFailure(`empty response (HTTP ${res.status})`, res.status);
    if (res.status >= 500 || res.status === 404 || (res.status === 400 && path === "/api/embed" && !embedRequestError(errorOf(first)))) {
      throw new NodeFailure(errorOf(first) ?? `HTTP ${res.status}`, res.status);
    }
    clearTimeout(timer);
    return {
      status: res.status,
      first,
      arrived,
      rest,
      cancel: () => {
        opts.signal.removeEventListener("abort", onClientGone);
        abort.abort();
      },
    };
  } catch (e) {
    clearTimeout(timer);
    opts.signal.removeEventListener("abort", onClientGone);
    abort.abort();
    if (e instanceof NodeFailure) throw e;
    if (opts.signal.aborted) throw e;
    // The node answered, too much: its answer, not a failure another node would not have.
    if (e instanceof AnswerTooLarge) throw new RouteError(502, e.message);
    const reason = abort.signal.reason;
    if (reason instanceof NodeFailure) throw reason;
    throw new NodeFailure(describeFetchError(e, opts.firstByteMs), null);
  }
}

/**
 * /api/embed answers its runner's failures with a 400 too (server/routes.go EmbedHandler, 0.33): only these are about
 * the request, to be said to the client; any other 400 there is the node's, and another node may serve it.
 */
const EMBED_REQUEST_ERRORS = /^(missing request body|invalid input type|the input length exceeds the context length|input (after truncation )?exceeds maximum context length|json: |invalid character|unexpected EOF|".*" does not support)/;
function embedRequestError(error: string | undefined): boolean {
  return error !== undefined && EMBED_REQUEST_ERRORS.test(error);
}

/** A node's URL for a path, parsed once: a few nodes and paths, called for every request. */
const nodeUrls = new Map<string, URL>();
function nodeUrl(baseUrl: string, path: string): URL {
  const key = `${baseUrl} ${path}`;
  let url = nodeUrls.get(key);
  if (!url) nodeUrls.set(key, (url = new URL(path, baseUrl)));
  return url;
}

function isStream(res: Answer): boolean {
  return res.contentType?.startsWith("application/x-ndjson") ?? false;
}

type Begun = Pick<OllamaCall, "arrived" | "rest"> & { first?: Chunk };

/** A streamed answer: its first line and those that came with it, and the lines after them as they come. */
async function streamed(res: Answer, limits: LineLimits): Promise<Begun> {
  const lines = readLineBatches(res.body, limits);
  const head = await lines.next();
  if (head.done) return { rest: noMoreChunks() };
  const [first, ...arrived] = head.value.map(ollamaChunk);
  return { first, arrived, rest: parsed(lines) };
}

/** A whole answer (stream:false, embeddings, errors) is one JSON document: read up to its cap, nothing after it. */
async function whole(res: Answer, cap: AnswerCap): Promise<Begun> {
  const text = utf8.decode(await readCapped(res.body, cap)).trim();
  return { first: text ? ollamaChunk(text) : undefined, rest: noMoreChunks() };
}

const utf8 = new TextDecoder();

/** The rest of an answer that was whole in its first chunk. */
export async function* noMoreChunks(): AsyncGenerator<Chunk[]> {}

async function* parsed(lines: AsyncGenerator<string[]>): AsyncGenerator<Chunk[]> {
  for await (const batch of lines) yield batch.map(ollamaChunk);
}

/** Asks a node's Ollama to pull a model; the response is Ollama's own (NDJSON progress, or one object). */
export function pullModel(baseUrl: string, model: string, stream: boolean, signal: AbortSignal): Promise<Response> {
  return fetch(new URL("/api/pull", baseUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, stream }), signal });
}

/** POST /api/create on a node's Ollama, with the client's request as it is (stream or not): its answer, to relay. */
export function createModel(baseUrl: string, request: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
  return fetch(new URL("/api/create", baseUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request), signal });
}

/** What a node's Ollama said to a change of its models: its status and error (502 when it did not answer). */
export interface Refused {
  status: number;
  error: string;
}

/**
 * Asks a node's Ollama for a change to its models that it answers with an empty 200 (DELETE /api/delete, POST
 * /api/copy): null when it made it, else why not. Its error is read up to `cap`.
 */
export async function changeModels(baseUrl: string, method: "DELETE" | "POST", path: string, body: unknown, timeoutMs: number, cap: AnswerCap): Promise<Refused | null> {
  try {
    const res = await fetch(new URL(path, baseUrl), { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    if (res.ok) {
      await res.body?.cancel();
      return null;
    }
    const answer = (await responseJson(res, cap).catch(() => ({}))) as { error?: unknown };
    return { status: res.status, error: typeof answer.error === "string" ? answer.error : `HTTP ${res.status}` };
  } catch (e) {
    return { status: 502, error: `no answer: ${describeFetchError(e, timeoutMs)}` };
  }
}

/**
 * Has a node's Ollama load `model` and keep it: for ever (keep_alive -1), or for the node's own keep-alive after its
 * last use (keep_alive left out). An empty prompt loads a model that generates; Ollama checks that first and refuses an
 * embedding model ("… does not support generate", server/routes.go), which an embedding with no input loads instead.
 * Throws why not. Resolves to how long the load took in ns: the answer's load_duration where it has one (held to the
 * call's own time, fleet/claimed-times.ts), else the call's own time (Ollama's answer to a load carries no durations;
 * a model already resident answers in a few ms).
 * The answer is read up to `cap`.
 */
export async function loadModel(baseUrl: string, model: string, timeoutMs: number, keep: Keep, cap: AnswerCap): Promise<number> {
  const started = performance.now();
  const signal = AbortSignal.timeout(timeoutMs);
  const keepAlive = keep === "forever" ? { keep_alive: -1 } : {};
  const call = (path: string, body: unknown) => loadCall(baseUrl, path, body, signal, timeoutMs, cap);
  let answer = await call("/api/generate", { model, prompt: "", stream: false, ...keepAlive });
  if (answer.status === 400 && /does not support generate/.test(answer.body.error ?? "")) answer = await call("/api/embed", { model, ...keepAlive });
  if (answer.status !== 200) throw new Error(answer.body.error ?? `HTTP ${answer.status}`);
  const ns = figure(answer.body.load_duration);
  const ms = performance.now() - started;
  return ns === undefined ? ms * 1e6 : claimHeld(ns, ms);
}

async function loadCall(baseUrl: string, path: string, body: unknown, signal: AbortSignal, timeoutMs: number, cap: AnswerCap): Promise<{ status: number; body: { error?: string; load_duration?: unknown } }> {
  try {
    const res = await fetch(new URL(path, baseUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
    const answer = await responseJson(res, cap).catch((e) => {
      if (e instanceof AnswerTooLarge) throw e;
      return {}; // not JSON: the status says it
    });
    return { status: res.status, body: answer as { error?: string } };
  } catch (e) {
    throw new Error(describeFetchError(e, timeoutMs));
  }
}
