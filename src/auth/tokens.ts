// Credentials as requests carry them, and comparing them without the time a
// comparison takes saying anything about the secret.
import { createHash, timingSafeEqual } from "node:crypto";

/** Hashing first makes both sides 32 bytes: no early exit on a length or a first differing byte. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(request: Request): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
  return match ? match[1]! : null;
}

/** What a client presents: a bearer token, or `x-api-key` as the Anthropic SDKs send it. */
export function presentedKey(request: Request): string | null {
  return bearerToken(request) ?? (request.headers.get("x-api-key")?.trim() || null);
}
