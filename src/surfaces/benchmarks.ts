// Benchmark runs (seed 000): GET lists the stored runs and the progress of the
// running one; POST saves a run from a benchmark script, and start / cancel drive
// a run from the dashboard (src/fleet/benchmark.ts does the work).
import { Elysia } from "elysia";
import * as v from "valibot";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { isJson } from "../backends/lines.ts";
import type { Database } from "bun:sqlite";
import { type BenchmarkRunner, MODEL_TYPES } from "../fleet/benchmark.ts";
import { listRuns, saveRun } from "../store/benchmarks.ts";
import { intParam } from "./analytics.ts";
import { validBody } from "./body.ts";
import { jsonError } from "../core/wire-errors.ts";

const MAX_LIMIT = 1000;

const text = v.pipe(v.string("expected a string"), v.trim(), v.nonEmpty("expected a non-empty string"));
const amount = v.pipe(v.number("expected a number"), v.minValue(0, "expected a number ≥ 0"));
const count = v.pipe(v.number("expected a whole number"), v.integer("expected a whole number"), v.minValue(0, "expected a whole number ≥ 0"));
const ms = v.optional(v.nullable(amount), null);
// The details are JSON text in the seed's shape; a script may also send the list or object itself.
const json = (fallback: string) =>
  v.optional(
    v.pipe(
      v.union([v.string(), v.array(v.unknown()), v.record(v.string(), v.unknown())], "expected JSON text, a list or an object"),
      v.transform((x) => (typeof x === "string" ? x : JSON.stringify(x))),
      v.check(isJson, "expected valid JSON text"),
    ),
    fallback,
  );

const runBody = v.object({
  run_id: text,
  timestamp: v.optional(amount, () => Date.now() / 1000),
  duration_s: amount,
  total_requests: count,
  total_failures: v.optional(count, 0),
  total_prompt_tokens: v.optional(count, 0),
  total_completion_tokens: v.optional(count, 0),
  requests_per_sec: v.optional(amount, 0),
  tokens_per_sec: v.optional(amount, 0),
  latency_p50_ms: ms,
  latency_p95_ms: ms,
  latency_p99_ms: ms,
  ttft_p50_ms: ms,
  ttft_p95_ms: ms,
  ttft_p99_ms: ms,
  fleet_snapshot: json("{}"),
  per_model_results: json("[]"),
  per_node_results: json("[]"),
  peak_utilization: json("[]"),
});

const startBody = v.object({
  mode: v.optional(v.picklist(["default", "smart"], 'expected "default" or "smart"'), "default"),
  duration: v.optional(
    v.pipe(v.number("expected a number of seconds"), v.minValue(1, "expected 1 to 3600 seconds"), v.maxValue(3600, "expected 1 to 3600 seconds")),
    300,
  ),
  model_types: v.optional(
    v.pipe(
      v.array(v.picklist(MODEL_TYPES, `expected one of ${MODEL_TYPES.map((t) => `"${t}"`).join(", ")}`), "expected a list of types"),
      v.minLength(1, "expected at least one type"),
      v.transform((types) => [...new Set(types)]),
    ),
    ["llm"],
  ),
});

/** Runs stored and started: any client may read them; saving, starting and cancelling are the admin's. */
const READ: RouteFacts = { access: "client", body: "json", errors: "herd" };
const CHANGE: RouteFacts = { access: "admin", body: "json", errors: "herd" };

/** The stored runs and the runner: what these routes read. */
interface Benchmarks {
  store: Database;
  benchmarks: BenchmarkRunner;
}

export function benchmarksSurface(rt: Benchmarks) {
  return new Elysia({ name: "benchmarks" })
    .use(routeFacts)
    .get("/dashboard/api/benchmarks", intParam("limit", 50, MAX_LIMIT, (limit) => ({ data: listRuns(rt.store, limit) })), { facts: READ })
    .get("/dashboard/api/benchmarks/progress", () => rt.benchmarks.progress(), { facts: READ })
    .use(benchmarkActions(rt));
}

/** Saving, starting and cancelling: they write the store or load the fleet, so they are their own plugin, easy to guard. */
export function benchmarkActions(rt: Benchmarks) {
  return new Elysia({ name: "benchmark-actions" })
    .use(routeFacts)
    .post(
      "/dashboard/api/benchmarks",
      async ({ request }) => {
        const run = await validBody(request, runBody);
        if (run instanceof Response) return run;
        if (!saveRun(rt.store, run)) return jsonError(409, `run_id: a run "${run.run_id}" is already stored; runs are never overwritten, use a new run_id`);
        return { status: "saved", run_id: run.run_id };
      },
      { parse: "none", facts: CHANGE },
    )
    .post(
      "/dashboard/api/benchmarks/start",
      async ({ request }) => {
        // No body at all (curl -X POST) means every default.
        const opts = request.body ? await validBody(request, startBody) : v.parse(startBody, {});
        if (opts instanceof Response) return opts;
        const runId = rt.benchmarks.start(opts);
        if (!runId) {
          const running = rt.benchmarks.progress();
          return jsonError(409, `benchmark ${running.run_id} is already running (${running.status}); wait for it or POST /dashboard/api/benchmarks/cancel`);
        }
        return { status: "started", run_id: runId, ...opts };
      },
      { parse: "none", facts: CHANGE },
    )
    .post("/dashboard/api/benchmarks/cancel", async () => ({ status: (await rt.benchmarks.cancel()) ? "cancelled" : "not_running" }), { facts: CHANGE });
}
