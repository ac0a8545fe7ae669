// The X-Fleet-* headers, the same for every kind of request: which node served which model for the
// model asked for, through which backend, after how many retries; or "none" when nothing served.
import type { RouteError } from "../errors.ts";

/** What answered a request, as the headers and the trace name it. */
export interface Served {
  nodeId: string;
  servedModel: string;
  /** ollama or mlx; image, transcription, native or vision for a node's own services. */
  backend: string;
  fallback: boolean;
  /**
   * The routing's verdict, higher = better fit (seed 000's X-Fleet-Score): the scorer's points, or under
   * routing.strategy "finish-time" the points its ranking gives (router/finish-order.ts:fitOf); null when the
   * candidates were ordered by load alone (MLX servers, node services).
   */
  score: number | null;
  /** The verdict's parts in points, for the trace and X-Fleet-Score-Breakdown. */
  breakdown?: Readonly<Record<string, number>> | null;
  /** The finish-time estimate the ranking read: its ms and their parts (X-Fleet-Predicted-Ms, X-Fleet-Prediction-Breakdown). */
  prediction?: Prediction | null;
  contextOverflow: { estimated: number; contextLength: number } | null;
}

/** When the request was expected to finish on the node that served it, in ms, and the parts of that. */
export interface Prediction {
  ms: number;
  breakdown: Readonly<Record<string, number>>;
}

export function fleetHeaders(requested: string, served: Served | null, retries: number): Record<string, string> {
  const headers = identityHeaders(requested, served);
  addVerdict((name, value) => (headers[name] = value), served, retries);
  return headers;
}

/** What names the node, the model and the backend: the same for every answer that node gives that model for that name. */
function identityHeaders(requested: string, served: Served | null): Record<string, string> {
  return {
    "X-Fleet-Node": served?.nodeId ?? "none",
    "X-Fleet-Served-Model": headerValue(served?.servedModel ?? "none"),
    "X-Fleet-Requested-Model": headerValue(requested),
    "X-Fleet-Fallback": String(served?.fallback ?? false),
    "X-Fleet-Backend": served?.backend ?? "none",
  };
}

/** What is this request's own: its retries, and the routing's verdict. */
function addVerdict(set: (name: string, value: string) => void, served: Served | null, retries: number): void {
  set("X-Fleet-Retries", String(retries));
  if (served?.score != null) set("X-Fleet-Score", String(Math.round(served.score)));
  if (served?.breakdown) set("X-Fleet-Score-Breakdown", parts(served.breakdown));
  if (served?.prediction) {
    set("X-Fleet-Predicted-Ms", String(Math.round(served.prediction.ms)));
    set("X-Fleet-Prediction-Breakdown", parts(served.prediction.breakdown));
  }
  if (served?.contextOverflow) {
    set("X-Fleet-Context-Overflow", `estimated_tokens=${served.contextOverflow.estimated}; context_length=${served.contextOverflow.contextLength}`);
  }
}

/** A breakdown as a header: `name=value; name=value`. */
function parts(breakdown: Readonly<Record<string, number>>): string {
  let text = "";
  for (const part in breakdown) text += `${text ? "; " : ""}${part}=${breakdown[part]}`;
  return text;
}

/**
 * The headers of an answer a node gave, as fleetHeaders makes them, with its content type: the part every answer of
 * that node, model and name shares is built once (a few of them are in use at a time) and copied, which costs a
 * Response far less than a fresh object of every header.
 */
export function answerHeaders(contentType: string, requested: string, served: Served, retries: number, extra: Record<string, string>): Headers {
  const key = `${contentType}\n${requested}\n${served.nodeId}\n${served.servedModel}\n${served.backend}\n${served.fallback}`;
  let shared = identities.get(key);
  if (!shared) {
    if (identities.size >= MAX_IDENTITIES) identities.clear(); // names a client made up must not grow it
    shared = new Headers({ "content-type": contentType, ...identityHeaders(requested, served) });
    identities.set(key, shared);
  }
  const headers = new Headers(shared);
  addVerdict((name, value) => headers.set(name, value), served, retries);
  for (const name in extra) headers.set(name, extra[name]!);
  return headers;
}

const identities = new Map<string, Headers>();
const MAX_IDENTITIES = 256;

/**
 * The headers of a request nothing served: the node whose answer the error is, if any, and what ran it there when
 * known; Retry-After when the error knows when.
 */
export function errorHeaders(requested: string, error: RouteError): Record<string, string> {
  const headers = fleetHeaders(requested, null, error.retries);
  if (error.nodeId) headers["X-Fleet-Node"] = error.nodeId;
  if (error.ran) {
    headers["X-Fleet-Backend"] = error.ran.backend;
    headers["X-Fleet-Served-Model"] = headerValue(error.ran.model);
  }
  if (error.retryAfterS !== undefined) headers["Retry-After"] = String(error.retryAfterS);
  return headers;
}

/** Header-safe text for what a client sent (a model name): printable ASCII, the rest percent-encoded as UTF-8, and bounded. */
export function headerValue(text: string): string {
  const safe = text.replace(/[^\x20-\x7e]+/g, (run) => Array.from(utf8.encode(run), (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(""));
  return safe.length > MAX_HEADER_CHARS ? `${safe.slice(0, MAX_HEADER_CHARS)}...` : safe;
}

const utf8 = new TextEncoder();
const MAX_HEADER_CHARS = 256;
