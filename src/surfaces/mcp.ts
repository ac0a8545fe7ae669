// The agent fleet over MCP (streamable HTTP, stateless: one server per POST).
// Each tool is a thin adapter over the same fleet operation as its REST route
// and returns the same body. Who calls is the connection's credential (the
// Authorization header), never an argument: a worker's fleet_reply and
// fleet_ask are always for its own session.
// The SDK's low-level Server is used so tool arguments are checked by the same
// valibot schemas as the REST bodies, and listed as their JSON Schema.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { toJsonSchema } from "@valibot/to-json-schema";
import { Elysia } from "elysia";
import * as v from "valibot";
import { Answer, badRequest } from "../agents/answers.ts";
import type { Principal } from "../agents/authz.ts";
import type { AgentFleet } from "../agents/fleet.ts";
import { askFields, check, inputOf, peekFields, replyFields, sendFields, spawnFields } from "../agents/inputs.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { VERSION } from "../version.ts";
import { authenticated } from "./agents.ts";
import { jsonError } from "../core/wire-errors.ts";

interface Tool {
  name: string;
  description: string;
  inputSchema: { type: "object"; [key: string]: unknown };
  call(fleet: AgentFleet, caller: Principal, args: unknown): Promise<Answer>;
}

function tool<S extends v.GenericSchema>(name: string, description: string, input: S, run: (fleet: AgentFleet, caller: Principal, args: v.InferOutput<S>) => Promise<Answer> | Answer): Tool {
  return {
    name,
    description,
    inputSchema: toJsonSchema(input, { errorMode: "ignore" }) as Tool["inputSchema"], // every tool takes an object
    async call(fleet, caller, args) {
      const parsed = check(input, args);
      return parsed instanceof Answer ? parsed : run(fleet, caller, parsed);
    },
  };
}

const id = (what: string) => v.pipe(v.string(`expected ${what}`), v.nonEmpty(`expected ${what}`));
const own = (caller: Principal) => (caller.kind === "member" ? caller.sessionId : "");

const TOOLS: Tool[] = [
  tool("fleet_list", "The workers (as GET /members), the configured leads and each profile's capacity.", inputOf({}), (f, c) => f.list(c)),
  tool("fleet_profiles", "The worker profiles and the default one (GET /profiles).", inputOf({}), (f, c) => f.profiles(c)),
  tool("fleet_spawn", "Spawn a worker (POST /members). Primary only.", inputOf(spawnFields), (f, c, a) => f.spawn(c, a)),
  tool("fleet_stop", "Stop a worker by pane id (DELETE /members/{paneId}): 204, also for a pane no worker has. Primary only.", inputOf({ paneId: id("a pane id") }), (f, c, a) => f.stop(c, a.paneId)),
  tool("fleet_cancel", "Give up a worker's open turn: whoever waits on it gets status failed, and the worker is idle again (POST /sessions/{target}/cancel).", inputOf({ target: id("the worker's session id") }), (f, c, a) => f.cancel(c, a.target)),
  tool(
    "fleet_send",
    "Send a worker a turn and wait for its reply, or answer its question (turnId). POST /sessions/{target}/message.",
    inputOf({ target: id("the worker's session id"), ...sendFields }),
    (f, c, { target, ...input }) => f.send(c, target, input),
  ),
  tool("fleet_reply", "A worker's reply for its own turn (POST /sessions/{own id}/reply).", inputOf(replyFields), (f, c, a) => f.reply(c, own(c), a)),
  tool("fleet_ask", "A worker's question to the lead waiting on its turn (POST /sessions/{own id}/ask).", inputOf(askFields), (f, c, a) => f.ask(c, own(c), a)),
  tool(
    "fleet_poll",
    "With target: drain that worker's held replies (GET /sessions/{target}/replies; peek: true leaves them held for fleet_ack). With ticket: an async send's task (GET /tasks/{ticket}).",
    inputOf({ target: v.optional(id("a session id")), ticket: v.optional(id("a ticket")), ...peekFields }),
    (f, c, a) => {
      if ((a.target === undefined) === (a.ticket === undefined)) return badRequest("target, ticket: give exactly one");
      return a.target !== undefined ? f.drain(c, a.target, a.peek) : f.task(c, a.ticket!);
    },
  ),
  tool("fleet_status", "A worker's live status and readiness (GET /sessions/{target}/status).", inputOf({ target: id("a session id") }), (f, c, a) => f.status(c, a.target)),
  tool("fleet_ack", "Drop one held reply of a worker by msgId, leaving the others (DELETE /sessions/{target}/replies/{msgId}). Primary only.", inputOf({ target: id("a session id"), msgId: id("a msgId") }), (f, c, a) => f.ack(c, a.target, a.msgId)),
  tool("fleet_whoami", "Who this connection's credential is.", inputOf({}), (f, c) => f.whoami(c)),
];

/** The same body as REST; the HTTP status it would have is in _meta. */
function toolResult(a: Answer): CallToolResult {
  const body = a.body ?? {};
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError: a.status >= 400, _meta: { "herd/status": a.status } };
}

function serverFor(fleet: AgentFleet, caller: Principal): Server {
  const server = new Server({ name: "herd", version: VERSION }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    if (caller.kind === "member") fleet.sessions.listedTools(caller.sessionId); // part of its readiness
    return { tools: TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const found = TOOLS.find((t) => t.name === request.params.name);
    if (!found) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}; tools/list has them`);
    return toolResult(await found.call(fleet, caller, request.params.arguments ?? {}));
  });
  return server;
}

/** A lead or a worker with its own credential, which the handler checks (`authenticated`). */
const OWN: RouteFacts = { access: "own", body: "json", errors: "herd" };

export function mcpSurface(rt: { agents: AgentFleet }) {
  // Stateless: nothing for a GET stream or a session DELETE to do.
  const noSessions = () => jsonError(405, "this MCP endpoint is stateless: POST JSON-RPC messages to /mcp", { allow: "POST" });
  return new Elysia({ name: "mcp" })
    .use(routeFacts)
    .post(
      "/mcp",
      ({ request }) =>
        authenticated(rt, request, async (caller) => {
          const server = serverFor(rt.agents, caller);
          const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          await server.connect(transport);
          try {
            return await transport.handleRequest(request);
          } finally {
            await server.close();
          }
        }),
      { parse: "none", facts: OWN },
    )
    .get("/mcp", noSessions, { facts: OWN })
    .delete("/mcp", noSessions, { facts: OWN });
}
