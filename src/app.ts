// The whole HTTP face of herd in one screen: each surface is a plugin.
import { Elysia } from "elysia";
import { log } from "./log.ts";
import type { Runtime } from "./runtime.ts";
import { analyticsSurface } from "./surfaces/analytics.ts";
import { anthropicSurface } from "./surfaces/anthropic.ts";
import { benchmarksSurface } from "./surfaces/benchmarks.ts";
import { dashboardSurface } from "./surfaces/dashboard.ts";
import { fleetSurface } from "./surfaces/fleet.ts";
import { healthSurface } from "./surfaces/health.ts";
import { healthChecksSurface } from "./surfaces/health-checks.ts";
import { ollamaSurface } from "./surfaces/ollama.ts";
import { openaiSurface } from "./surfaces/openai.ts";
import { pullSurface } from "./surfaces/pull.ts";
import { modelManagementSurface } from "./surfaces/model-management.ts";
import { pinsSurface } from "./surfaces/pins.ts";
import { responsesSurface } from "./surfaces/responses.ts";
import { settingsSurface } from "./surfaces/settings.ts";
import { jsonError } from "./surfaces/errors.ts";

export function buildApp(rt: Runtime) {
  return new Elysia()
    .onError(({ code, error, request }) => {
      if (code === "NOT_FOUND") return jsonError(404, `no route for ${request.method} ${new URL(request.url).pathname}`);
      if (code === "PARSE") return jsonError(400, "invalid JSON body: send a JSON object with content-type application/json");
      if (code === "VALIDATION") return jsonError(400, (error as Error).message);
      log.error(`${request.method} ${new URL(request.url).pathname} failed: ${(error as Error).message}`);
      return jsonError(500, "internal error; see the router's log");
    })
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
    .use(modelManagementSurface(rt));
}
