// Reading what a client sends: its JSON body (an object), or a model named in its path; or a
// message that says what is wrong.
import * as v from "valibot";
import { readBody } from "../auth/limits.ts";
import { formatIssues } from "../config/problems.ts";
import { fleetHeaders } from "../core/fleet-headers.ts";
import { echoed } from "../core/printable.ts";
import { jsonError } from "../core/wire-errors.ts";
import { bodyNamesProblem, nameProblem } from "../core/client-names.ts";

export async function readJsonObject(request: Request): Promise<Record<string, unknown> | string> {
  const text = await readBody(request);
  if (!text.trim()) return "missing request body: send a JSON object";
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    // The parser's message quotes the body: kept short and printable.
    return `invalid JSON body: ${echoed((e as Error).message, 200)}`;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return "invalid JSON body: expected an object";
  const deep = tooDeep(body as Record<string, unknown>);
  if (deep) return `${deep}: nested deeper than ${MAX_DEPTH} levels`;
  return bodyNamesProblem(body as Record<string, unknown>) ?? (body as Record<string, unknown>);
}

/** Deeper than any real request (a tool's JSON schema nests a few levels); deep enough to overflow the stack of code that walks it. */
const MAX_DEPTH = 64;

/** The top-level field under which the body nests deeper than MAX_DEPTH, or null. Iterative: a deep body cannot overflow it. */
function tooDeep(body: Record<string, unknown>): string | null {
  const stack: [value: unknown, depth: number, field: string][] = Object.entries(body).map(([field, value]) => [value, 1, field]);
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [value, depth, field] = top;
    if (!value || typeof value !== "object") continue;
    if (depth > MAX_DEPTH) return field;
    for (const child of Array.isArray(value) ? value : Object.values(value)) if (child && typeof child === "object") stack.push([child, depth + 1, field]);
  }
  return null;
}

/**
 * The model a request names, in the first of `fields` that holds a non-empty string; or the 400's message: `missing`
 * when none does, or why the name cannot be taken (core/client-names.ts), naming the field.
 */
export function modelOf(body: Record<string, unknown>, missing: string, fields = ["model"]): { model: string } | { error: string } {
  const field = fields.find((f) => typeof body[f] === "string" && body[f].trim());
  if (field === undefined) return { error: missing };
  const model = body[field] as string;
  const problem = nameProblem(field, model);
  return problem ? { error: problem } : { model };
}

/**
 * The model a path segment names (`segment` as the router matched it, still percent-encoded: a name may hold a
 * slash), or the 400's message, which names the route (`route`: "GET /v1/models/{model}").
 */
export function modelInPath(segment: string, route: string): { model: string } | { error: string } {
  let model: string;
  try {
    model = decodeURIComponent(segment);
  } catch {
    // Not percent-encoded UTF-8 (a lone surrogate's bytes, say): no model has that name.
    return { error: `model: expected the model's name percent-encoded as UTF-8 in ${route}` };
  }
  if (!model.trim()) return { error: `name the model: ${route}` };
  const problem = nameProblem("model", model);
  return problem ? { error: problem } : { model };
}

/** The X-Fleet-* headers of a request refused before routing (a 400): no node, no retry, and the model asked for if it named one. */
export function refusedHeaders(named: { model: string } | { error: string }): Record<string, string> {
  return fleetHeaders("model" in named ? named.model : "none", null, 0);
}

/** The body checked against `schema`: its output, or a 400 whose message names each bad field. */
export async function validBody<S extends v.GenericSchema>(request: Request, schema: S): Promise<v.InferOutput<S> | Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  const parsed = v.safeParse(schema, body);
  return parsed.success ? parsed.output : jsonError(400, formatIssues(parsed.issues, schema).join("; "));
}
