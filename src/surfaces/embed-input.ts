// The text(s) an embedding request names. Ollama has two routes: /api/embed reads `input` (a text
// or a list), the older /api/embeddings `prompt` (one text). Clients mix the names up, and a node
// asked under the wrong one embeds nothing (200, no vectors), so each route takes the other's name
// too, and the node gets the one it reads. No text at all is no mistake there: real Ollama loads
// the model and answers no vectors (the reference's 400 is not what Ollama does).

/** A non-empty text or a non-empty list of them; else null. */
export function textsOf(value: unknown): string | string[] | null {
  const text = (t: unknown) => typeof t === "string" && t !== "";
  return text(value) || (Array.isArray(value) && value.length > 0 && value.every(text)) ? (value as string | string[]) : null;
}

export const TEXTS_EXPECTED = "expected a non-empty string or a non-empty list of non-empty strings";

/** No text at all, as Ollama reads it: absent, null, "" or []. */
const nothing = (value: unknown) => value == null || value === "" || (Array.isArray(value) && value.length === 0);

/**
 * The body with its text(s) under the name the route's node reads, the other name dropped; or why not.
 * /api/embeddings answers one vector: a list of one is that text, a longer one is refused rather than cut.
 * No text is "" on /api/embeddings and [] on /api/embed (a length of 0 either way).
 */
export function embedBody(body: Record<string, unknown>, legacy: boolean): Record<string, unknown> | string {
  const [name, alias] = legacy ? ["prompt", "input"] : ["input", "prompt"];
  const field = body[name] == null && body[alias] != null ? alias : name;
  const { [alias]: _, ...rest } = body;
  if (nothing(body[field])) return { ...rest, [name]: legacy ? "" : [] };
  const texts = textsOf(body[field]);
  if (texts === null) return `${field}: expected a string${legacy ? "" : " or a list of non-empty strings"}`;
  if (legacy && Array.isArray(texts) && texts.length > 1) return `${field}: /api/embeddings embeds one text; send a list to /api/embed`;
  return { ...rest, [name]: legacy && Array.isArray(texts) ? texts[0] : texts };
}

/** The vectors' length the client asked for, when it is a number (the embedding routes pass nothing else of theirs to a native server). */
export function dimensionsOf(body: Record<string, unknown>): { dimensions?: number } {
  return typeof body.dimensions === "number" ? { dimensions: body.dimensions } : {};
}
