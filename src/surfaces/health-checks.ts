// The health page's JSON: GET /dashboard/api/health (every check, cached 30 s;
// ?refresh=1 recomputes) and GET /dashboard/api/context-usage (allocated vs
// used context per model).
import { Elysia } from "elysia";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { contextUsageReport } from "../fleet/health/context-usage.ts";
import { HealthEngine, type HealthSources } from "../fleet/health/engine.ts";
import { intParam } from "./analytics.ts";
import { jsonError } from "../core/wire-errors.ts";

/** The dashboard's data: for any client. */
const DATA: RouteFacts = { access: "client", body: "json", errors: "herd" };

export function healthChecksSurface(rt: HealthSources) {
  const engine = new HealthEngine(rt);
  return new Elysia({ name: "health-checks", prefix: "/dashboard/api" })
    .use(routeFacts)
    .get("/health", ({ query }) => {
      const refresh = query.refresh;
      if (refresh !== undefined && refresh !== "0" && refresh !== "1") return jsonError(400, `refresh: expected 0 or 1, got ${JSON.stringify(refresh)}`);
      return engine.report(refresh === "1");
    }, { facts: DATA })
    .get("/context-usage", intParam("days", 7, 365, (days) => ({ days, models: contextUsageReport(rt.store, rt.registry, days) })), { facts: DATA });
}
