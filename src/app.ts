// The whole HTTP face of herd in one screen: each surface is a plugin.
import { Elysia } from "elysia";
import { closesAfter } from "./auth/connections.ts";
import { authGuard } from "./auth/guard.ts";
import { BodyTimeout, BodyTooLarge, TooManyBodies } from "./auth/limits.ts";
import { noRoute, refusal } from "./auth/refusal.ts";
import { RouteTable } from "./auth/route-facts.ts";
import { log } from "./log.ts";
import { agentsSurface } from "./surfaces/agents.ts";
import { analyticsSurface } from "./surfaces/analytics.ts";
import { anthropicSurface } from "./surfaces/anthropic.ts";
import { benchmarksSurface } from "./surfaces/benchmarks.ts";
import { dashboardSurface } from "./surfaces/dashboard.ts";
import { fleetSurface } from "./surfaces/fleet.ts";
import { healthSurface } from "./surfaces/health.ts";
import { healthChecksSurface } from "./surfaces/health-checks.ts";
import { mcpSurface } from "./surfaces/mcp.ts";
import { imagesSurface } from "./surfaces/images.ts";
import { ollamaSurface } from "./surfaces/ollama.ts";
import { openaiSurface } from "./surfaces/openai.ts";
import { pullSurface } from "./surfaces/pull.ts";
import { modelManagementSurface } from "./surfaces/model-management.ts";
import { modelChangesSurface } from "./surfaces/model-changes.ts";
import { pinsSurface } from "./surfaces/pins.ts";
import { platformSurface } from "./surfaces/platform.ts";
import { responsesSurface } from "./surfaces/responses.ts";
import { settingsSurface } from "./surfaces/settings.ts";
import { transcriptionSurface } from "./surfaces/transcription.ts";
import { VERSION } from "./version.ts";

/** All the plugins read, each declaring its own part: the router builds them (runtime.ts), a test passes idle ones (app-fixtures.ts) or fakes. */
export type AppSources = Parameters<typeof authGuard>[0] &
  Parameters<typeof healthSurface>[0] &
  Parameters<typeof fleetSurface>[0] &
  Parameters<typeof pinsSurface>[0] &
  Parameters<typeof dashboardSurface>[0] &
  Parameters<typeof analyticsSurface>[0] &
  Parameters<typeof healthChecksSurface>[0] &
  Parameters<typeof settingsSurface>[0] &
  Parameters<typeof benchmarksSurface>[0] &
  Parameters<typeof ollamaSurface>[0] &
  Parameters<typeof openaiSurface>[0] &
  Parameters<typeof responsesSurface>[0] &
  Parameters<typeof anthropicSurface>[0] &
  Parameters<typeof pullSurface>[0] &
  Parameters<typeof imagesSurface>[0] &
  Parameters<typeof transcriptionSurface>[0] &
  Parameters<typeof modelManagementSurface>[0] &
  Parameters<typeof modelChangesSurface>[0] &
  Parameters<typeof agentsSurface>[0] &
  Parameters<typeof mcpSurface>[0] &
  Parameters<typeof platformSurface>[0];

export function buildApp(rt: AppSources) {
  const routes = new RouteTable();
  const app = new Elysia()
    // On every answer, errors and streams included: /api/version answers the fleet's Ollama version, not herd's.
    .onRequest(({ set }) => {
      set.headers["X-Herd-Version"] = VERSION;
    })
    // A handler's own Response takes the header itself: Elysia copies a Response into a new one, headers and all,
    // whenever set.headers holds anything, and that copy cost more than the rest of Elysia's part of a request.
    // A body herd did not read (a refusal, a route that takes none), or an address past its connections: the
    // connection closes behind the answer (auth/connections.ts).
    .onAfterHandle({ as: "global" }, ({ request, responseValue, set }) => {
      const close = closesAfter(request, false);
      if (!(responseValue instanceof Response)) {
        if (close) set.headers.connection = "close";
        return;
      }
      responseValue.headers.set("X-Herd-Version", VERSION);
      delete set.headers["X-Herd-Version"];
      if (close) responseValue.headers.set("connection", "close");
    })
    .onError(({ code, error, request, route }) => {
      const answer = errorAnswer(routes, code, error as Error, request, route);
      // The rest of a body that failed (late, too large, one too many, not JSON) is not waited for.
      if (closesAfter(request, true)) answer.headers.set("connection", "close");
      return answer;
    })
    .use(authGuard(rt, routes))
    .use(healthSurface(rt))
    .use(fleetSurface(rt))
    .use(pinsSurface(rt))
    .use(dashboardSurface(rt))
    .use(analyticsSurface(rt))
    .use(healthChecksSurface(rt))
    .use(settingsSurface(rt))
    .use(benchmarksSurface(rt))
    .use(ollamaSurface(rt))
    .use(openaiSurface(rt))
    .use(responsesSurface(rt))
    .use(anthropicSurface(rt))
    .use(pullSurface(rt))
    .use(imagesSurface(rt))
    .use(transcriptionSurface(rt))
    .use(modelManagementSurface(rt))
    .use(modelChangesSurface(rt))
    .use(agentsSurface(rt))
    .use(mcpSurface(rt))
    .use(platformSurface(rt));
  // Every surface is in: the guard, the body limits and the error writer look each route up here.
  routes.read(app.routes);
  return app;
}

/** An error's answer, in the wire format the route declares (a path no route matches: its API's), so each SDK raises its own kind of error. */
function errorAnswer(routes: RouteTable, code: unknown, error: Error, request: Request, route: string): Response {
  const path = new URL(request.url).pathname;
  if (code === "NOT_FOUND") return noRoute(request.method, path);
  const format = routes.of(request.method, route)?.errors ?? "herd";
  if (code === "PARSE") return refusal(format, 400, "invalid JSON body: send a JSON object with content-type application/json");
  if (code === "VALIDATION") return refusal(format, 400, error.message);
  // A chunked body past the route's limit (herd's), or past the server-wide cap (Bun's).
  if (error instanceof BodyTooLarge) return refusal(format, 413, error.message);
  if (error instanceof BodyTimeout) return refusal(format, 408, error.message);
  if (error instanceof TooManyBodies) return refusal(format, 429, error.message);
  if (/exceeded maxRequestBodySize/.test(error.message)) return refusal(format, 413, "request body too large");
  log.error(`${request.method} ${path} failed: ${error.message}`);
  return refusal(format, 500, "internal error; see the router's log");
}
