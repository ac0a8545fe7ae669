// herd's own request fields, shared by every surface: tags for per-app
// analytics, fallback models, strict mode. They are taken out of the body
// before it reaches a backend, which would not know them. herd keeps them (traces, tags), so
// each is capped (core/client-names.ts).
import { MAX_NAMES, nameProblem, namesProblem } from "../core/client-names.ts";
import { clientTag } from "../core/herd-tags.ts";

export interface HerdFields {
  tags: string[];
  fallbackModels: string[];
  /** The client asked for exactly this model: no substitution. */
  strict: boolean;
}

/** Problems are returned as a message naming the field, for a 400 in the surface's format. */
export function takeHerdFields(body: Record<string, unknown>, headers: Headers): HerdFields | string {
  const tags: string[] = [];
  const metadata = body.metadata;
  if (metadata !== undefined && (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))) return "metadata: expected an object";
  const metaTags = (metadata as { tags?: unknown } | undefined)?.tags;
  if (metaTags !== undefined) {
    if (!Array.isArray(metaTags) || metaTags.some((t) => typeof t !== "string")) return "metadata.tags: expected a list of strings";
    tags.push(...metaTags);
  }
  const tagsProblem = namesProblem("metadata.tags", tags);
  if (tagsProblem) return tagsProblem;
  const headerTags = (headers.get("x-herd-tags") ?? "").split(",");
  const headerProblem = namesProblem("X-Herd-Tags", headerTags);
  if (headerProblem) return headerProblem;
  tags.push(...headerTags);
  if (body.user !== undefined) {
    if (typeof body.user !== "string") return "user: expected a string";
    const tooLong = nameProblem("user", body.user);
    if (tooLong) return tooLong;
    if (body.user) tags.push(`user:${body.user}`);
  }
  const fallbacks = body.fallback_models ?? [];
  if (!Array.isArray(fallbacks) || fallbacks.some((m) => typeof m !== "string" || !m.trim())) return "fallback_models: expected a list of model names";
  const fallbacksProblem = namesProblem("fallback_models", fallbacks);
  if (fallbacksProblem) return fallbacksProblem;
  if (body.fallback !== undefined && typeof body.fallback !== "boolean") return "fallback: expected true or false";
  const strict = body.fallback === false || headers.get("x-fleet-no-fallback")?.toLowerCase() === "true";
  // key: tags are herd's to give, from the key a request really came with (pipeline/trace.ts), never one a client claims.
  const distinct = [...new Set(tags.map((t) => clientTag(t.trim())).filter((t): t is string => Boolean(t)))];
  // Each tag is a row of the store: the request's own, from all three places, are held to one count.
  if (distinct.length > MAX_NAMES) return `tags: at most ${MAX_NAMES} in all from metadata.tags, X-Herd-Tags and user (got ${distinct.length})`;
  for (const key of ["metadata", "user", "fallback_models", "fallback"]) delete body[key];
  return { tags: distinct, fallbackModels: fallbacks as string[], strict };
}
