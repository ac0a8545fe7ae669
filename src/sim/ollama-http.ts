// The HTTP basics every simulated Ollama route shares: its error type,
// request bodies parsed the way gin reports failures, and responses in the
// bytes Go's encoders write.
import { goJson } from "./encoding.ts";

export const JSON_TYPE = "application/json; charset=utf-8";
export const NDJSON_TYPE = "application/x-ndjson";

/** An error Ollama reports as {"error": message} with this status. */
export class OllamaError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

// Go's bytes and gin's charset; server.ts (/_sim, plain JSON) and mlx.ts
// (Python's bytes, CORS headers) answer in their own formats.
export function json(value: unknown, status = 200): Response {
  return new Response(goJson(value), { status, headers: { "Content-Type": JSON_TYPE } });
}

export function text(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "Content-Type": "text/plain; charset=utf-8" } });
}

/** What Go's json.Encoder writes: the value and a newline. */
export function goLine(value: unknown): string {
  return `${goJson(value)}\n`;
}

// Parses a JSON body the way gin's ShouldBindJSON reports failures.
export async function readBody(req: Request, goType: string): Promise<Record<string, unknown>> {
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

/** A string field, or "" as Go leaves a missing one. */
export const str = (value: unknown) => (typeof value === "string" ? value : "");
