// The agent fleet over REST (seed 004's routes; GET /healthz is health.ts's).
// Each handler authenticates the caller, checks the input and hands both to the
// fleet, whose Answer is sent as is: the MCP face (mcp.ts) sends the same ones.
import { Elysia } from "elysia";
import * as v from "valibot";
import { Answer, badRequest, refuse } from "../agents/answers.ts";
import type { Principal } from "../agents/authz.ts";
import { askFields, check, inputOf, peekFields, replyFields, sendFields, spawnFields } from "../agents/inputs.ts";
import { renderMetrics } from "../agents/metrics.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { clientOf, isAdmin } from "../config/credentials/keys.ts";
import { bearerToken, Presented, presentedKey } from "../config/credentials/tokens.ts";
import type { MetricsSources } from "../agents/metrics.ts";
import { readJsonObject } from "./body.ts";

const sendBody = inputOf(sendFields);
const replyBody = inputOf(replyFields);
const askBody = inputOf(askFields);
const spawnBody = inputOf(spawnFields);
const drainQuery = inputOf(peekFields);
const cancelBody = inputOf({});
const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
/** Every caller here is a lead or a worker with its own credential, which each handler checks (`as`). */
const OWN: RouteFacts = { access: "own", body: "json", errors: "herd" };



export function agentsSurface(rt: MetricsSources) {
  const fleet = rt.agents;
  const as = (request: Request, run: (caller: Principal) => Reply) => authenticated(rt, request, run);
  const withBody = <S extends v.GenericSchema>(request: Request, schema: S, run: (caller: Principal, input: v.InferOutput<S>) => Promise<Answer>, extra = {}) =>
    as(request, async (caller) => {
      const body = await jsonBody(request);
      if (body instanceof Answer) return body;
      const input = check(schema, { ...body, ...extra });
      return input instanceof Answer ? input : run(caller, input);
    });
  return new Elysia({ name: "agents" })
    .use(routeFacts)
    .get("/metrics", ({ request }) => scrape(rt, request), { facts: OWN })
    .get("/sessions", ({ request }) => as(request, (c) => fleet.workspaces(c)), { facts: OWN })
    .get("/agents", ({ request }) => as(request, (c) => fleet.agents(c)), { facts: OWN })
    .get("/members", ({ request }) => as(request, (c) => fleet.members(c)), { facts: OWN })
    .get("/profiles", ({ request }) => as(request, (c) => fleet.profiles(c)), { facts: OWN })
    .get("/member-credentials", ({ request }) => as(request, (c) => fleet.memberCredentials(c)), { facts: OWN })
    // role, profile, cwd, worktree and ticket come as query parameters or in a JSON body; the query wins.
    .post("/members", ({ request, query }) => withBody(request, spawnBody, (c, input) => fleet.spawn(c, input), query), { parse: "none", facts: OWN })
    .delete("/members/:paneId", ({ request, params }) => as(request, (c) => fleet.stop(c, params.paneId)), { facts: OWN })
    .post("/sessions/:id/message", ({ request, params }) => withBody(request, sendBody, (c, input) => fleet.send(c, params.id, input)), { parse: "none", facts: OWN })
    .post("/sessions/:id/reply", ({ request, params }) => withBody(request, replyBody, (c, input) => fleet.reply(c, params.id, input)), { parse: "none", facts: OWN })
    // ?peek=true leaves the replies held, for an ack of each (DELETE …/replies/{msgId}): fleet_poll's peek and fleet_ack.
    .get("/sessions/:id/replies", ({ request, params, query }) =>
      as(request, (c) => {
        const input = check(drainQuery, query);
        return input instanceof Answer ? input : fleet.drain(c, params.id, input.peek);
      }), { facts: OWN })
    .delete("/sessions/:id/replies/:msgId", ({ request, params }) => as(request, (c) => fleet.ack(c, params.id, params.msgId)), { facts: OWN })
    .post("/sessions/:id/cancel", ({ request, params }) => withBody(request, cancelBody, (c) => fleet.cancel(c, params.id)), { parse: "none", facts: OWN })
    .post("/sessions/:id/ask", ({ request, params }) => withBody(request, askBody, (c, input) => fleet.ask(c, params.id, input)), { parse: "none", facts: OWN })
    .get("/sessions/:id/status", ({ request, params }) => as(request, (c) => fleet.status(c, params.id)), { facts: OWN })
    .get("/tasks/:ticket", ({ request, params }) => as(request, (c) => fleet.task(c, params.ticket)), { facts: OWN });
}

type Reply = Answer | Response | Promise<Answer | Response>;

const FLEET_CREDENTIALS = "a lead's (agents.credentials in herd.config.ts) or a worker's HERD_TOKEN";

/**
 * Seed 004's METRICS (any agent-fleet credential), and the operator's: the admin token, or a client key
 * given permissions: ["metrics"] (a Prometheus scraper, a health probe).
 */
function scrape(rt: MetricsSources, request: Request): Response | Promise<Response> {
  const metrics = () => new Response(renderMetrics(rt), { headers: { "content-type": PROMETHEUS_TEXT } });
  const config = rt.live.current.config;
  const key = presentedKey(request);
  const presented = key === null ? null : new Presented(key);
  const client = clientOf(config, presented);
  if (isAdmin(config, presented) || client?.permissions?.includes("metrics")) return metrics();
  if (client) return toResponse(refuse(403, "forbidden", `key "${client.name}" may not read /metrics: give it permissions: ["metrics"] in auth.clients, or send the admin token`));
  const who = `the admin token (auth.adminToken), a client key with permissions: ["metrics"], ${FLEET_CREDENTIALS}`;
  return authenticated(rt, request, (c) => rt.agents.metricsRefusal(c) ?? metrics(), who);
}

/** Runs `run` for the request's caller; 401 when the request carries no valid credential (`who`: what it could send). */
export async function authenticated(rt: Pick<MetricsSources, "agents">, request: Request, run: (caller: Principal) => Reply, who = FLEET_CREDENTIALS): Promise<Response> {
  const token = bearerToken(request);
  const caller = rt.agents.authenticate(token);
  if (!caller) return toResponse(unauthorized(token !== null, who), { "www-authenticate": 'Bearer realm="herd"' });
  const result = await run(caller);
  return result instanceof Answer ? toResponse(result) : result;
}

function unauthorized(presented: boolean, who: string): Answer {
  return refuse(401, "unauthorized", presented ? "the credential is not valid: unknown, or revoked when its worker stopped or exited" : `send Authorization: Bearer <credential>: ${who}`);
}

function toResponse(a: Answer, headers: Record<string, string> = {}): Response {
  return a.body ? Response.json(a.body, { status: a.status, headers }) : new Response(null, { status: a.status, headers });
}

// A route whose fields are all optional (spawn, reply) may come without a body at all.
async function jsonBody(request: Request): Promise<Record<string, unknown> | Answer> {
  if (!request.body || request.headers.get("content-length") === "0") return {};
  const body = await readJsonObject(request);
  return typeof body === "string" ? badRequest(body) : body;
}
