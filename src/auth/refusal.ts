// herd's refusals (401, 403, 413, 429) in the wire format of the route refused,
// so each SDK raises its own kind of error: Anthropic's on /v1/messages,
// OpenAI's on the rest of /v1, {"error": "..."} (Ollama's and herd's own) elsewhere.
import { fleetHeaders } from "../pipeline/headers.ts";
import { anthropicError } from "../surfaces/anthropic-codec.ts";
import { jsonError } from "../surfaces/errors.ts";
import { openaiError } from "../surfaces/openai-codec.ts";

export function refusal(path: string, status: number, message: string, headers: Record<string, string> = {}): Response {
  // The model APIs carry the canonical X-Fleet-* headers on every answer, refusals included.
  const all = path.startsWith("/api/") || path.startsWith("/v1/") ? { ...fleetHeaders("none", null, 0), ...headers } : headers;
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return anthropicError(status, message, all);
  if (path.startsWith("/v1/")) return openaiError(status, message, all);
  return jsonError(status, message, all);
}
