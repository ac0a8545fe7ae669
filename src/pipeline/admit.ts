// Admission, the same for every kind of request: the client key's own limits (auth.clients: the
// models it may use, its requests in flight and per minute), then the client address's cap
// (routing.clientMaxInFlight). The places taken are given back with leave() once the request ends.
import type { Config } from "../config/schema.ts";
import type { ClientKey } from "../core/client-key.ts";
import { RouteError } from "../errors.ts";
import type { ClientGate } from "../router/client-gate.ts";

/** Who sent a request, for its admission and its trace. */
export interface RouteMeta {
  tags: string[];
  clientIp: string | null;
  /** The client key the request came with (auth.clients; see callerOf), or null when herd is open. */
  caller: ClientKey | null;
}

/** Takes the request's places, or says why not: a 403 (a model the key may not use) or a 429 with Retry-After. */
export function admit(clients: ClientGate, config: Config, meta: RouteMeta, asked: string, resolved: string, fallbacks: string[]): RouteError | null {
  const { clientMaxInFlight, clientRetryAfterSeconds } = config.routing;
  const { caller } = meta;
  // The key's own limits before its model check: a key over its rate is refused before anything of the request is
  // looked at or kept, and a request it may not make still draws on its rate (the trace of a refusal is a row).
  const refused = caller && (caller.enter() ?? modelRefusal(caller, config, asked, resolved, fallbacks));
  if (refused) return new RouteError(refused.status, refused.message, 0, [], refused.status === 429 ? (refused.retryAfterS ?? clientRetryAfterSeconds) : undefined);
  const client = clientOf(meta);
  if (clients.enter(client, clientMaxInFlight)) return null;
  caller?.leave();
  return new RouteError(429, `client ${client} already has ${clientMaxInFlight} requests in flight (routing.clientMaxInFlight); retry after ${clientRetryAfterSeconds} s`, 0, [], clientRetryAfterSeconds);
}

function modelRefusal(caller: ClientKey, config: Config, asked: string, resolved: string, fallbacks: string[]) {
  const refused = caller.modelRefusal(asked, resolved, fallbacks, config.modelMap);
  if (refused) caller.leave();
  return refused;
}

/** Gives back what admit() took; once per admitted request. */
export function leave(clients: ClientGate, meta: RouteMeta): void {
  clients.leave(clientOf(meta));
  meta.caller?.leave();
}

function clientOf(meta: RouteMeta): string {
  return meta.clientIp ?? "unknown";
}
