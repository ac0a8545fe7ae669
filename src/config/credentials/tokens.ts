// Credentials as requests carry them, and comparing them without the time a
// comparison takes saying anything about the secret.
import { createHash, timingSafeEqual } from "node:crypto";

export function sameSecret(given: string, expected: string): boolean {
  return new Presented(given).is(expected);
}

/** A credential a request presents, hashed once however many secrets it is compared with (every client key). */
export class Presented {
  private readonly hash: Buffer;

  constructor(token: string) {
    this.hash = digest(token);
  }

  /** Hashing first makes both sides 32 bytes: no early exit on a length or a first differing byte. */
  is(secret: string): boolean {
    return timingSafeEqual(this.hash, secretDigest(secret));
  }
}

/** Configured secrets are few and change only with the config: each is hashed once (past 256, the oldest go). */
const secretDigests = new Map<string, Buffer>();

function secretDigest(secret: string): Buffer {
  let hash = secretDigests.get(secret);
  if (!hash) {
    if (secretDigests.size >= 256) secretDigests.delete(secretDigests.keys().next().value!);
    hash = digest(secret);
    secretDigests.set(secret, hash);
  }
  return hash;
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
