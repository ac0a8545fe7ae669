// The guard in front of every route: the body's declared size, then who is
// asking, by the access table. Client keys become a Caller that the router
// core charges (rate, in flight, models) and names in the trace.
import { Elysia } from "elysia";
import type { Config } from "../config/schema.ts";
import { log } from "../log.ts";
import type { Runtime } from "../runtime.ts";
import { accessOf } from "./access.ts";
import { Caller, KeyUsage } from "./caller.ts";
import { clientOf, isAdmin } from "./credentials.ts";
import { admitBody } from "./limits.ts";
import { refusal } from "./refusal.ts";
import { Presented, presentedKey } from "./tokens.ts";

type Server = { requestIP(r: Request): { address: string } | null; port?: number } | null;

const callers = new WeakMap<Request, Caller>();

/** The client key a request came with, once the guard has let it through; null when herd is open or for the admin. */
export function callerOf(request: Request): Caller | null {
  return callers.get(request) ?? null;
}

export function authGuard(rt: Runtime) {
  const usage = new KeyUsage();
  return new Elysia({ name: "auth" })
    .onStart(({ server }) => announce(rt.live.config, server?.port))
    .onBeforeHandle({ as: "global" }, ({ request, route, server }) => guard(rt.live.config, usage, request, route, server as Server));
}

function guard(config: Config, usage: KeyUsage, request: Request, route: string, server: Server): Response | undefined {
  const tooLarge = admitBody(request, route, config.server);
  const path = route; // the route as registered: it picks the refusal's wire format as the path would
  if (tooLarge) return refusal(path, 413, tooLarge);
  const access = accessOf(request.method, route);
  if (access === "open" || access === "node" || access === "own") return;
  const token = presentedKey(request);
  // Hashed once, however many secrets it is compared with.
  const presented = token === null ? null : new Presented(token);
  // The admin, and herd's own requests (benchmarks), may read and run anything, uncounted.
  if (isAdmin(config, presented)) return;
  if (access === "admin") {
    if (config.auth.adminToken) return unauthorized(path, token ? "invalid admin token" : "this changes the fleet: send the admin token (auth.adminToken) as Authorization: Bearer");
    if (isLoopback(server?.requestIP(request)?.address)) return;
    return refusal(path, 403, "this changes the fleet, which without auth.adminToken only the router's own machine may do; set auth.adminToken in herd.config.ts to allow it from elsewhere");
  }
  if (!config.auth.clients.length) return;
  const client = clientOf(config, presented);
  if (!client) return unauthorized(path, token ? "invalid API key" : "API key required: send it as Authorization: Bearer <key> (or x-api-key)");
  callers.set(request, new Caller(client, usage));
}

function unauthorized(path: string, message: string): Response {
  log.debug(`refused ${path}: ${message}`);
  return refusal(path, 401, message, { "WWW-Authenticate": 'Bearer realm="herd"' });
}

function isLoopback(address: string | undefined): boolean {
  return address !== undefined && (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127."));
}

/** Says once, at start-up, who may use this herd when nothing restricts it. */
function announce(config: Config, port: number | undefined): void {
  const where = `${config.server.host}:${port ?? config.server.port}`;
  if (!config.auth.clients.length) log.warn(`no client keys configured: anyone who can reach ${where} may use the herd (set auth.clients; see docs/security.md)`);
  if (!config.auth.adminToken) log.info("no admin token configured: only this machine (loopback) may change the fleet (set auth.adminToken)");
}
