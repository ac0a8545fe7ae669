// The names a client sends — model names, tags, user ids, fallback models — are kept (traces, the
// /metrics labels) and echoed (errors, X-Fleet-* headers), so each is capped where it comes in: a
// name too long, not whole Unicode, or too many of them, is refused with a message naming the field (a 400).

/** Longer than any real model name or tag (a Hugging Face repo path with its quantization is under 100). */
export const MAX_NAME_CHARS = 256;
/** More tags or fallback models than any request needs: each tag is a row in the store. */
export const MAX_NAMES = 32;

/** What herd names a model it does not know in what it keeps (/metrics, the traces' daily roll-ups): any name a client sends would otherwise stay for ever. */
export const OTHER_MODEL = "other";

/** The top-level fields of a JSON body that name a model or a node's model. */
const NAMED_FIELDS = ["model", "name", "source", "destination"];

/**
 * Why `value` cannot be taken as a name, or null: too long to keep, or not whole Unicode (a lone UTF-16
 * surrogate has no UTF-8 form, so the store would keep another name than the one compared).
 */
export function nameFault(value: string): string | null {
  if (value.length > MAX_NAME_CHARS) return `at most ${MAX_NAME_CHARS} characters (got ${value.length})`;
  if (!value.isWellFormed()) return "expected a name of whole Unicode characters; it holds an unpaired surrogate";
  return null;
}

/** nameFault under the client's field name. */
export function nameProblem(field: string, value: string): string | null {
  const fault = nameFault(value);
  return fault && `${field}: ${fault}`;
}

/** Why the list of names in `field` is too long, or one of them is, or null. */
export function namesProblem(field: string, values: string[]): string | null {
  if (values.length > MAX_NAMES) return `${field}: at most ${MAX_NAMES} entries (got ${values.length})`;
  for (let i = 0; i < values.length; i++) {
    const fault = nameFault(values[i]!);
    if (fault) return `${field}[${i}]: ${fault}`;
  }
  return null;
}

/** Why a JSON body's model names (model, name, …) cannot be taken, or null. */
export function bodyNamesProblem(body: Record<string, unknown>): string | null {
  for (const field of NAMED_FIELDS) {
    const value = body[field];
    const problem = typeof value === "string" ? nameProblem(field, value) : null;
    if (problem) return problem;
  }
  return null;
}
