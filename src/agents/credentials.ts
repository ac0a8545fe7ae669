// Credentials: the leads' come from herd.config.ts (agents.credentials), each
// worker's is minted at spawn, kept only as a hash, and revoked when the worker
// stops or exits. A credential is presented as `Authorization: Bearer <token>`.
import { createHash, randomBytes } from "node:crypto";
import { sameSecret } from "../config/credentials/tokens.ts";
import type { Principal, Role } from "./authz.ts";

type Member = Extract<Principal, { kind: "member" }>;

const hash = (token: string) => createHash("sha256").update(token).digest("hex");

export class Credentials {
  /** sha256(token) → the worker it belongs to. */
  private workers = new Map<string, Member>();
  /** Workers that have presented their credential: a worker's first call is its MCP client connecting. */
  private seen = new Set<string>();

  constructor(private readonly leads: () => { primary: string | null; architect: string | null }) {}

  /** A fresh credential for a worker; the plain value exists only in the worker's environment. */
  issue(sessionId: string, role: Role): string {
    const token = `hw_${randomBytes(32).toString("base64url")}`;
    this.workers.set(hash(token), { kind: "member", sessionId, role });
    return token;
  }

  revoke(sessionId: string): void {
    for (const [key, member] of this.workers) if (member.sessionId === sessionId) this.workers.delete(key);
    this.seen.delete(sessionId);
  }

  /** Whether the worker has called herd with its credential yet. */
  used(sessionId: string): boolean {
    return this.seen.has(sessionId);
  }

  resolve(token: string | null): Principal | null {
    if (!token) return null;
    const member = this.workers.get(hash(token));
    if (member) {
      this.seen.add(member.sessionId);
      return member;
    }
    const { primary, architect } = this.leads();
    if (primary && sameSecret(token, primary)) return { kind: "primary" };
    if (architect && sameSecret(token, architect)) return { kind: "architect" };
    return null;
  }
}
