// A simulated Ollama server: the native /api routes and the OpenAI-compatible
// /v1 routes, byte-compatible with Ollama's Go encoder, over a disk of models
// and their residency in memory. This module only wires them into serveSim.
import { defaultContext, defaultParallel, MAX_LOADED_MODELS, NEWEST_OLLAMA } from "../fleet/ollama-releases.ts";
import { Disk } from "./disk.ts";
import type { Faults } from "./faults.ts";
import type { SimModelSpec } from "./models.ts";
import * as api from "./ollama-api.ts";
import { OllamaError, json, text } from "./ollama-http.ts";
import * as openai from "./ollama-openai.ts";
import type { OllamaNode } from "./ollama-run.ts";
import { Residency } from "./residency.ts";
import { serveSim, type Backend, type RequestContext, type SimServer } from "./server.ts";

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
  /**
   * When set, each model generates at the rate this memory bandwidth allows for
   * its size (a small model runs faster than a big one) instead of tokensPerSecond.
   */
  memoryBandwidthGbps?: number;
  /** Time to load a model that is on disk but not resident. Default 20. */
  loadTimeMs?: number;
  /** When set, loading also reads the model file at this many GB/s: load time grows with model size. */
  diskGbps?: number;
  /** OLLAMA_NUM_PARALLEL: requests each loaded model runs at once; the rest wait in line. Default: the release's (1 since 0.9.7). */
  numParallel?: number;
  /** OLLAMA_MAX_LOADED_MODELS: models loaded at once; another unloads one first. Default: MAX_LOADED_MODELS (3). */
  maxLoadedModels?: number;
  /** OLLAMA_CONTEXT_LENGTH. Default: unset, so the release picks the context (by memory since 0.15.5). */
  contextLength?: number;
  /** The release the node behaves as, and GET /api/version reports. Default: the newest herd follows (NEWEST_OLLAMA). */
  ollamaVersion?: string;
  faults?: Faults;
}

const RUNNER_CRASHED =
  "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details";
/** What /api/embed says of a runner that died under it: llm/llama_server.go Embedding's error, which EmbedHandler answers with a 400. */
const EMBEDDING_RUNNER_DIED = 'do embedding request: Post "http://127.0.0.1:50122/v1/embeddings": EOF';

type Handler = (node: OllamaNode, req: Request, ctx: RequestContext) => Promise<Response>;

const ROUTES: Record<string, Record<string, Handler>> = {
  "/": { GET: api.running, HEAD: api.running },
  "/api/version": { GET: api.version, HEAD: api.version },
  "/api/tags": { GET: api.tags, HEAD: api.tags },
  "/api/ps": { GET: api.ps },
  "/api/show": { POST: api.show },
  "/api/chat": { POST: api.chat },
  "/api/generate": { POST: api.generate },
  "/api/embed": { POST: api.embed },
  "/api/embeddings": { POST: api.embeddings },
  "/api/pull": { POST: api.pull },
  "/api/delete": { DELETE: api.remove },
  "/api/copy": { POST: api.copy },
  "/api/create": { POST: api.create },
  "/v1/chat/completions": { POST: openai.chatCompletions },
  "/v1/images/generations": { POST: openai.imageGenerations },
  "/v1/models": { GET: openai.models },
};

export function startOllamaServer(opts: SimNodeOptions): SimServer {
  const version = opts.ollamaVersion ?? NEWEST_OLLAMA;
  const memoryGb = opts.memoryGb ?? 64;
  const residency = new Residency({
    memoryBytes: memoryGb * 2 ** 30,
    loadTimeMs: opts.loadTimeMs ?? 20,
    diskGbps: opts.diskGbps,
    numParallel: opts.numParallel ?? defaultParallel(version),
    maxLoadedModels: opts.maxLoadedModels ?? MAX_LOADED_MODELS,
    defaultContext: opts.contextLength ?? defaultContext(version, memoryGb).numCtx,
    contextFromEnv: opts.contextLength !== undefined,
  });
  const node: OllamaNode = { disk: new Disk(), residency, version, memoryBandwidthGbps: opts.memoryBandwidthGbps };
  setModels(node, opts.models ?? ["llama3.2:3b"]);
  setLoaded(node, opts.loaded ?? []);
  return serveSim({ ...opts, kind: "ollama", backend: backend(node) });
}

function backend(node: OllamaNode): Backend {
  return {
    handle: (req, ctx) => route(node, req, ctx),
    // A failing runner: 500 on every route but /api/embed, whose handler reports any runner error as a 400 (server/routes.go).
    error500: (url) => (url.pathname === "/api/embed" ? json({ error: EMBEDDING_RUNNER_DIED }, 400) : errorResponse(url, 500, RUNNER_CRASHED)),
    state: () => {
      const { memoryGb, usedGb, loaded, inFlightByModel } = node.residency.state();
      return { memoryGb, usedGb, models: node.disk.names(), loaded, inFlightByModel };
    },
    patchKeys: ["models", "loaded"],
    patch: (body) => patch(node, body),
  };
}

async function route(node: OllamaNode, req: Request, ctx: RequestContext): Promise<Response> {
  const methods = ROUTES[ctx.url.pathname];
  if (!methods) return text("404 page not found", 404);
  const handler = methods[req.method];
  if (!handler) return text("405 method not allowed", 405);
  try {
    return await handler(node, req, ctx);
  } catch (e) {
    if (!(e instanceof OllamaError)) throw e;
    return errorResponse(ctx.url, e.status, e.message);
  }
}

// The /v1 routes wrap errors the OpenAI way; the native ones as {"error": …}.
function errorResponse(url: URL, status: number, message: string): Response {
  return url.pathname.startsWith("/v1/") ? openai.openaiError(status, message) : json({ error: message }, status);
}

// POST /_sim's models and loaded: all or nothing.
function patch(node: OllamaNode, body: Record<string, unknown>): void {
  if ("models" in body && !Array.isArray(body.models)) throw new Error("models must be an array");
  if ("loaded" in body && !Array.isArray(body.loaded)) throw new Error("loaded must be an array");
  const undo = [node.disk.checkpoint(), node.residency.checkpoint()];
  try {
    if (body.models) setModels(node, body.models as (string | SimModelSpec)[]);
    if (body.loaded) setLoaded(node, body.loaded as string[]);
  } catch (e) {
    for (const restore of undo) restore();
    throw e;
  }
}

// A model taken off disk is unloaded too.
function setModels(node: OllamaNode, models: readonly (string | SimModelSpec)[]): void {
  node.disk.replace(models);
  node.residency.retain((name) => node.disk.has(name));
}

function setLoaded(node: OllamaNode, names: readonly string[]): void {
  const specs = names.map((n) => {
    const model = node.disk.get(n);
    if (!model) throw new Error(`cannot load "${n}": not on disk`);
    return model.spec;
  });
  node.residency.replace(specs);
}
