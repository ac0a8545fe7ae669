// Who may do what: the seed's Authz table. Principals are the two leads (the
// primary and the architect, whose credentials are in herd.config.ts) and the
// workers (each with the credential it was given at spawn).
import { type Answer, refuse } from "./answers.ts";

export const ROLES = ["architect", "dev", "reviewer"] as const;
export type Role = (typeof ROLES)[number];

export type Principal = { kind: "primary" } | { kind: "architect" } | { kind: "member"; sessionId: string; role: Role };

export type Action = "SPAWN" | "STOP" | "SEND" | "DRAIN" | "REPLY" | "ASK" | "READ" | "METRICS";

const owns = (p: Principal, session?: string) => p.kind === "member" && p.sessionId === session;

const RULES: Record<Action, { who: string; allows: (p: Principal, session?: string) => boolean }> = {
  SPAWN: { who: "the primary", allows: (p) => p.kind === "primary" },
  STOP: { who: "the primary", allows: (p) => p.kind === "primary" },
  SEND: { who: "the primary or the architect", allows: (p) => p.kind === "primary" || p.kind === "architect" },
  DRAIN: { who: "the primary", allows: (p) => p.kind === "primary" },
  REPLY: { who: "the worker that owns the session", allows: owns },
  ASK: { who: "the worker that owns the session", allows: owns },
  READ: { who: "any authenticated caller", allows: () => true },
  METRICS: { who: "any authenticated caller", allows: () => true },
};

function describePrincipal(p: Principal): string {
  return p.kind === "member" ? `worker ${p.sessionId}` : `the ${p.kind}`;
}

/** null when `caller` may do `action` (on `session`, for REPLY and ASK), else the 403 to answer. */
export function forbidden(caller: Principal, action: Action, session?: string): Answer | null {
  const rule = RULES[action];
  if (rule.allows(caller, session)) return null;
  const what = session && (action === "REPLY" || action === "ASK") ? `${action} on session ${session}` : action;
  return refuse(403, "forbidden", `${describePrincipal(caller)} may not ${what}: only ${rule.who} may`);
}
