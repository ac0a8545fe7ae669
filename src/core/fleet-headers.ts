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
   * The routing's verdict: the scorer's points, or under routing.strategy "finish-time" the expected finish in ms;
   * null when the candidates were ordered by load alone (MLX servers, node services).
   */
  score: number | null;
  /** The verdict's parts (points, or ms), for the trace and X-Fleet-Score-Breakdown. */
  breakdown?: Readonly<Record<string, number>> | null;
  contextOverflow: { estimated: number; contextLength: number } | null;
}

export function fleetHeaders(requested: string, served: Served | null, retries: number): Record<string, string> {
  const headers: Record<string, string> = {
    "X-Fleet-Node": served?.nodeId ?? "none",
    "X-Fleet-Served-Model": headerValue(served?.servedModel ?? "none"),
    "X-Fleet-Requested-Model": headerValue(requested),
    "X-Fleet-Fallback": String(served?.fallback ?? false),
    "X-Fleet-Backend": served?.backend ?? "none",
    "X-Fleet-Retries": String(retries),
  };
  if (served?.score != null) headers["X-Fleet-Score"] = String(Math.round(served.score));
  if (served?.breakdown) headers["X-Fleet-Score-Breakdown"] = Object.entries(served.breakdown).map(([part, value]) => `${part}=${value}`).join("; ");
  if (served?.contextOverflow) {
    headers["X-Fleet-Context-Overflow"] = `estimated_tokens=${served.contextOverflow.estimated}; context_length=${served.contextOverflow.contextLength}`;
  }
  return headers;
}

/** The headers of a request nothing served: the node whose answer the error is, if any; Retry-After when the error knows when. */
export function errorHeaders(requested: string, error: RouteError): Record<string, string> {
  const headers = fleetHeaders(requested, null, error.retries);
  if (error.nodeId) headers["X-Fleet-Node"] = error.nodeId;
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
