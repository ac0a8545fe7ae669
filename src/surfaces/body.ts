// Reading a client's JSON body: an object, or a message that says what is wrong.
import * as v from "valibot";
import { formatIssues } from "../config/problems.ts";
import { jsonError } from "./errors.ts";

export async function readJsonObject(request: Request): Promise<Record<string, unknown> | string> {
  const text = await request.text();
  if (!text.trim()) return "missing request body: send a JSON object";
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    return `invalid JSON body: ${(e as Error).message}`;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return "invalid JSON body: expected an object";
  return body as Record<string, unknown>;
}

/** The model a request names, or null when it is missing or empty. */
export function modelOf(body: Record<string, unknown>): string | null {
  return typeof body.model === "string" && body.model.trim() ? body.model : null;
}

/** The body checked against `schema`: its output, or a 400 whose message names each bad field. */
export async function validBody<S extends v.GenericSchema>(request: Request, schema: S): Promise<v.InferOutput<S> | Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  const parsed = v.safeParse(schema, body);
  return parsed.success ? parsed.output : jsonError(400, formatIssues(parsed.issues, schema).join("; "));
}
