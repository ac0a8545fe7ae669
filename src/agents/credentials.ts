// Credentials: the leads' come from herd.config.ts (agents.credentials), each
// worker's is minted at spawn, kept only as a hash, and revoked when the worker
// stops or exits. A credential is presented as `Authorization: Bearer <token>`.
import { createHash, randomBytes } from "node:crypto";
import { sameSecret } from "../auth/tokens.ts";
import type { Principal, Role } from "./authz.ts";

type Member = Extract<Principal, { kind: "member" }>;

const hash = (token: string) => createHash("sha256").update(token).digest("hex");

export class Credentials {
  /** sha256(token) → the worker it belongs to. */
  private workers = new Map<string, Member>();

  constructor(private readonly leads: () => { primary: string | null; architect: string | null }) {}

  /** A fresh credential for a worker; the plain value exists only in the worker's environment. */
  issue(sessionId: string, role: Role): string {
    const token = `hw_${randomBytes(32).toString("base64url")}`;
    this.workers.set(hash(token), { kind: "member", sessionId, role });
    return token;
  }

  revoke(sessionId: string): void {
    for (const [key, member] of this.workers) if (member.sessionId === sessionId) this.workers.delete(key);
  }

  resolve(token: string | null): Principal | null {
    if (!token) return null;
    const member = this.workers.get(hash(token));
    if (member) return member;
    const { primary, architect } = this.leads();
    if (primary && sameSecret(token, primary)) return { kind: "primary" };
    if (architect && sameSecret(token, architect)) return { kind: "architect" };
    return null;
  }
}
