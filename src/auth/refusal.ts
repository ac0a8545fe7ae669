// herd's refusals (401, 403, 413, 429, and the errors Elysia raises) in the wire
// format a route declares (route-facts.ts), so each SDK raises its own kind of error.
import { fleetHeaders } from "../core/fleet-headers.ts";
import { anthropicError, jsonError, openaiError } from "../core/wire-errors.ts";
import type { ErrorFormat } from "./route-facts.ts";

export function refusal(format: ErrorFormat, status: number, message: string, headers: Record<string, string> = {}, openaiCode?: string | null): Response {
  if (format === "herd") return jsonError(status, message, headers);
  // The model APIs carry the canonical X-Fleet-* headers on every answer, refusals included.
  const all = { ...fleetHeaders("none", null, 0), ...headers };
  if (format === "anthropic") return anthropicError(status, message, all);
  if (format === "openai") return openaiError(status, message, all, openaiCode);
  return jsonError(status, message, all);
}

/** A path no route matches: a 404 in the API its prefix names, which says no model is missing (OpenAI's code null, as OpenAI's own answers an unknown URL). */
export function noRoute(method: string, path: string): Response {
  return refusal(unroutedFormat(path), 404, `no route for ${method} ${path}`, {}, null);
}

/**
 * The format for a path no route matches (a 404), so none declares it: the API its prefix
 * names, as a client of that API expects: Anthropic's on /v1/messages, OpenAI's on the rest of
 * /v1, Ollama's on /api, herd's elsewhere.
 */
export function unroutedFormat(path: string): ErrorFormat {
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return "anthropic";
  if (path.startsWith("/v1/")) return "openai";
  return path.startsWith("/api/") ? "ollama" : "herd";
}

/** A client key's own refusal (caller.ts: a model it may not use, its per-minute limit) in the route's format; a 429 says when to retry. */
export function keyRefusal(format: ErrorFormat, refused: { status: number; message: string; retryAfterS?: number }): Response {
  return refusal(format, refused.status, refused.message, refused.retryAfterS ? { "retry-after": String(refused.retryAfterS) } : {});
}
