// The dashboard's trace analytics as JSON: recent traces, usage, models, hourly
// trends and per-tag (app) stats, read from the store.
import { Elysia } from "elysia";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import type { Database } from "bun:sqlite";
import * as analytics from "../store/analytics.ts";
import { storeSize } from "../store/db.ts";
import type { LiveConfig } from "../config/live.ts";
import { jsonError } from "../core/wire-errors.ts";

const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;
/** The dashboard's data: for any client. */
const DATA: RouteFacts = { access: "client", body: "json", errors: "herd" };

export function analyticsSurface({ store: db, live }: { store: Database; live: LiveConfig }) {
  const since = (seconds: number) => Date.now() / 1000 - seconds;
  const days = <T>(answer: (days: number, since: number) => T) => intParam("days", 7, 365, (d) => answer(d, since(d * DAY_S)));
  return new Elysia({ name: "analytics", prefix: "/dashboard/api" })
    .use(routeFacts)
    .get("/traces", intParam("limit", 50, 1000, (limit) => ({ traces: analytics.recentTraces(db, limit) })), { facts: DATA })
    .get("/usage", days((days, from) => ({ days, data: analytics.usageByNodeModelDay(db, from) })), { facts: DATA })
    .get("/overview", () => ({ ...analytics.overview(db), store: storeFacts(db, live) }), { facts: DATA })
    .get("/models", days((days, from) => ({ days, daily: analytics.modelsDaily(db, from), summary: analytics.modelsSummary(db, from) })), { facts: DATA })
    .get("/trends", intParam("hours", 72, 365 * 24, (hours) => ({ hours, data: analytics.hourlyTrends(db, since(hours * HOUR_S)) })), { facts: DATA })
    .get("/apps", days((days, from) => ({ days, by_tag: analytics.appsByTag(db, from) })), { facts: DATA })
    .get("/apps/daily", days((days, from) => ({ days, daily: analytics.appsDaily(db, from) })), { facts: DATA });
}

/** The store's size and what it keeps (store.traces), for the dashboard's header. */
function storeFacts(db: Database, live: LiveConfig) {
  const { maxAgeDays, maxMb } = live.config.store.traces;
  return { ...storeSize(db), max_age_days: maxAgeDays, max_mb: maxMb };
}

// A limit or a window: a whole number from 1 to max, its default when absent. Anything else
// is a 400 that names the parameter, rather than a silent default or a failed query.
export function intParam<T>(name: string, fallback: number, max: number, answer: (n: number) => T) {
  return ({ query }: { query: Record<string, unknown> }) => {
    const raw = query[name];
    if (raw === undefined) return answer(fallback);
    const n = typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(n >= 1 && n <= max)) return jsonError(400, `${name}: expected a whole number from 1 to ${max}, got ${JSON.stringify(raw)}`);
    return answer(n);
  };
}
