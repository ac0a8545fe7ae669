// The health page's JSON: GET /dashboard/api/health (every check, cached 30 s;
// ?refresh=1 recomputes) and GET /dashboard/api/context-usage (allocated vs
// used context per model).
import { Elysia } from "elysia";
import { contextUsageReport } from "../fleet/health/context-usage.ts";
import { HealthEngine } from "../fleet/health/engine.ts";
import type { Runtime } from "../runtime.ts";
import { intParam } from "./analytics.ts";
import { jsonError } from "./errors.ts";

export function healthChecksSurface(rt: Runtime) {
  const engine = new HealthEngine(rt);
  return new Elysia({ name: "health-checks", prefix: "/dashboard/api" })
    .get("/health", ({ query }) => {
      const refresh = query.refresh;
      if (refresh !== undefined && refresh !== "0" && refresh !== "1") return jsonError(400, `refresh: expected 0 or 1, got ${JSON.stringify(refresh)}`);
      return engine.report(refresh === "1");
    })
    .get("/context-usage", intParam("days", 7, 365, (days) => ({ days, models: contextUsageReport(rt.store, rt.registry, days) })));
}
