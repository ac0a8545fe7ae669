// The guard in front of every route: by the facts the route declares
// (route-facts.ts), the body's declared size, a change another site's page
// sent (cross-site.ts), then who is asking. Client keys
// become a Caller that the router core charges (rate, in flight, models) and
// names in the trace.
import { Elysia } from "elysia";
import type { LiveConfig } from "../config/live.ts";
import type { Config } from "../config/schema.ts";
import { isLoopback } from "../core/loopback.ts";
import { log } from "../log.ts";
import { ClientGate } from "../router/client-gate.ts";
import { Caller, KeyUsage } from "./caller.ts";
import { clientOf, isAdmin } from "../config/credentials/keys.ts";
import { ClientConnections, type ConnectionServer } from "./connections.ts";
import { crossSiteRefusal } from "./cross-site.ts";
import { admitBody } from "./limits.ts";
import { refusal, unroutedFormat } from "./refusal.ts";
import type { ErrorFormat, RouteTable } from "./route-facts.ts";
import { Presented, presentedKey } from "../config/credentials/tokens.ts";

type Server = (ConnectionServer & { port?: number }) | null;

const callers = new WeakMap<Request, Caller>();
const addresses = new WeakMap<Request, string>();

/** The guard reads the config live: a reload changes keys without a restart. */
interface GuardSources {
  live: LiveConfig;
}

/** The client's address, as the guard read it (once per request: the lookup is not free); null for a request it did not see. */
export function clientAddressOf(request: Request): string | null {
  return addresses.get(request) ?? null;
}

/** The client key a request came with, once the guard has let it through; null when herd is open or for the admin. */
export function callerOf(request: Request): Caller | null {
  return callers.get(request) ?? null;
}

/** `routes`: the app's routes and their facts, read once every surface is in. */
export function authGuard(rt: GuardSources, routes: RouteTable) {
  const usage = new KeyUsage();
  const pendingBodies = new ClientGate();
  const connections = new ClientConnections();
  return new Elysia({ name: "auth" })
    .onStart(({ server }) => {
      announce(rt.live.config, server?.port);
      if (server) connections.start(server, () => rt.live.config);
    })
    .onStop(() => connections.stop())
    // Every request, a path no route matches included: each connection counts against its address.
    .onRequest(({ request, server }) => arrived(rt.live.config, connections, request, server as Server))
    .onBeforeHandle({ as: "global" }, ({ request, route }) => guard(rt.live.config, usage, pendingBodies, routes, request, route));
}

function arrived(config: Config, connections: ClientConnections, request: Request, server: Server): Response | undefined {
  const from = server?.requestIP(request);
  if (!server || !from) return;
  addresses.set(request, from.address);
  const refused = connections.admit(server, request, from, config);
  if (refused) return refusal(unroutedFormat(new URL(request.url).pathname), 429, refused, { Connection: "close", "Retry-After": String(config.routing.clientRetryAfterSeconds) });
}

function guard(config: Config, usage: KeyUsage, pendingBodies: ClientGate, routes: RouteTable, request: Request, route: string): Response | undefined {
  const facts = routes.of(request.method, route);
  // A route that does not say who may call it is closed, never open.
  if (!facts) return refusal("herd", 403, `${request.method} ${route} declares no access level, so herd refuses it`);
  const { access, errors } = facts;
  const address = addresses.get(request);
  const tooLarge = admitBody(request, facts.body, config, address ?? "unknown", pendingBodies);
  if (tooLarge) return refusal(errors, 413, tooLarge);
  const crossSite = crossSiteRefusal(request);
  if (crossSite) return refusal(errors, crossSite.status, crossSite.message);
  if (access === "open" || access === "node" || access === "own") return;
  const token = presentedKey(request);
  // Hashed once, however many secrets it is compared with.
  const presented = token === null ? null : new Presented(token);
  // The admin, and herd's own requests (benchmarks), may read and run anything, uncounted.
  if (isAdmin(config, presented)) return;
  if (access === "pull") {
    const client = clientOf(config, presented);
    // Its models still bound what it may pull: the surface reads them from the caller.
    if (client?.permissions?.includes("pull")) return void callers.set(request, new Caller(client, usage));
    if (client) return refusal(errors, 403, `key "${client.name}" may not pull models: give it permissions: ["pull"] in auth.clients, or send the admin token`);
  }
  if (access === "admin" || access === "pull") {
    if (config.auth.adminToken) return unauthorized(route, errors, token ? "invalid admin token" : "this changes the fleet: send the admin token (auth.adminToken) as Authorization: Bearer");
    if (address !== undefined && isLoopback(address)) return;
    return refusal(errors, 403, "this changes the fleet, which without auth.adminToken only the router's own machine may do; set auth.adminToken in herd.config.ts to allow it from elsewhere");
  }
  if (!config.auth.clients.length) return;
  const client = clientOf(config, presented);
  if (!client) return unauthorized(route, errors, token ? "invalid API key" : "API key required: send it as Authorization: Bearer <key> (or x-api-key)");
  callers.set(request, new Caller(client, usage));
}

function unauthorized(route: string, format: ErrorFormat, message: string): Response {
  log.debug(`refused ${route}: ${message}`);
  return refusal(format, 401, message, { "WWW-Authenticate": 'Bearer realm="herd"' });
}


/** Says once, at start-up, who may use this herd when nothing restricts it. */
function announce(config: Config, port: number | undefined): void {
  const where = `${config.server.host}:${port ?? config.server.port}`;
  if (!config.auth.clients.length) log.warn(`no client keys configured: anyone who can reach ${where} may use the herd (set auth.clients; see docs/security.md)`);
  if (!config.auth.adminToken) log.info("no admin token configured: only this machine (loopback) may change the fleet (set auth.adminToken)");
  const open = config.auth.nodeToken ? [] : config.nodes.filter((n) => !n.token).map((n) => n.id);
  if (open.length) {
    log.warn(
      `no node credential for ${open.join(", ")} (open mode): anyone who can reach ${where} may send their heartbeats and report their machines; ` +
        "a node without an ollama address in the config is then reached at the heartbeat's own address (port 11434), " +
        "but such a heartbeat cannot set where herd sends its prompts, drain a node or say it stopped; of a node's services it says only the state of those the config declares, " +
        "and of a node herd polls nothing else (its memory, labels and version are ignored). " +
        "Give nodes a credential: `herd node --enroll` (docs/security.md)",
    );
  }
}
