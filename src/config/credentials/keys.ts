// What the config says about credentials: which node may heartbeat with which
// token, which client key a request presents, whether it is the admin's.
// Every comparison is constant-time (a Presented credential against each secret) and none stops at the first match.
import type { Config } from "../schema.ts";
import { isInternal } from "./internal.ts";
import type { Secret } from "./secrets.ts";
import { Presented, sameSecret } from "./tokens.ts";

export type ClientEntry = Config["auth"]["clients"][number];

/** `proven`: the heartbeat carried the node's credential; without one configured (open mode), it proves nothing. */
export type Enrollment = { ok: true; proven: boolean } | { ok: false; status: 401 | 403; reason: string };

/** Whether a heartbeat presenting `token` may report as `nodeId`. */
export function enrollment(config: Config, nodeId: string, token: string | null): Enrollment {
  const entry = config.nodes.find((n) => n.id === nodeId);
  const accepted = [entry?.token, config.auth.nodeToken].filter((s): s is Secret => s !== undefined);
  if (!accepted.length) {
    if (entry) return { ok: true, proven: false };
    return {
      ok: false,
      status: 403,
      reason: `node "${nodeId}" is not declared in the config; add it to herd.config.ts (nodes: [{ id: "${nodeId}" }]) or give agents a credential (auth.nodeToken)`,
    };
  }
  if (!token) {
    return {
      ok: false,
      status: 401,
      reason: `node "${nodeId}" sent no node credential; run the agent with HERD_NODE_TOKEN or --token-file (auth.nodeToken or nodes[].token)`,
    };
  }
  if (!matchesAny(new Presented(token), accepted)) return { ok: false, status: 401, reason: `node "${nodeId}" sent an invalid node credential` };
  return { ok: true, proven: true };
}

/** The client key `presented` is, or null. */
export function clientOf(config: Config, presented: Presented | null): ClientEntry | null {
  if (presented === null) return null;
  let found: ClientEntry | null = null;
  for (const client of config.auth.clients) if (matches(presented, client.key) && !found) found = client;
  return found;
}

/** The admin token, or herd's own internal credential. */
export function isAdmin(config: Config, presented: Presented | null): boolean {
  if (presented === null) return false;
  const admin = config.auth.adminToken ? matches(presented, config.auth.adminToken) : false;
  return isInternal(presented) || admin;
}

function matchesAny(presented: Presented, secrets: Secret[]): boolean {
  return secrets.map((s) => matches(presented, s)).includes(true);
}

// An unreadable secret (only possible where secrets are lenient, on an agent) matches nothing.
function matches(presented: Presented, secret: Secret): boolean {
  return secret.value !== null && presented.is(secret.value);
}

/** Config rules about credentials, one line each naming the field (never a secret's value). */
export function authProblems(config: Config): string[] {
  const problems: string[] = [];
  const clients = config.auth.clients;
  clients.forEach((client, i) => {
    const first = clients.findIndex((c) => c.name === client.name);
    if (first < i) problems.push(`auth.clients[${i}].name: "${client.name}" is already used by auth.clients[${first}]; key names must be unique`);
    const same = clients.findIndex((c) => c.key.value !== null && client.key.value !== null && sameSecret(c.key.value, client.key.value));
    if (same < i && same !== -1) problems.push(`auth.clients[${i}].key: the same key as auth.clients[${same}]; each client needs its own key`);
  });
  for (const [name, profile] of Object.entries(config.agents.profiles)) {
    if (profile.clientKey !== undefined && !clients.some((c) => c.name === profile.clientKey)) {
      problems.push(`agents.profiles.${name}.clientKey: no auth.clients entry is named "${profile.clientKey}"`);
    }
  }
  if (clients.length && config.anthropic.apiKey) {
    problems.push("anthropic.apiKey: not used with auth.clients; give Anthropic clients a key in auth.clients instead");
  }
  return problems;
}

/**
 * The credential an agent sends for `nodeId`: its entry's token, else auth.nodeToken, else none.
 * Throws when the chosen secret cannot be read on this machine (agents load secrets leniently).
 */
export function agentToken(config: Config, nodeId: string): string | null {
  const secret = config.nodes.find((n) => n.id === nodeId)?.token ?? config.auth.nodeToken;
  if (secret && secret.value === null) throw new Error(`the node credential (${secret.origin}) cannot be read on this machine; fix it, or set HERD_NODE_TOKEN or --token-file`);
  return secret?.value ?? null;
}
