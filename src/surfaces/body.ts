// Reading a client's JSON body: an object, or a message that says what is wrong.
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
