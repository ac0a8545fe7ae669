// Fleet management: the state of every node, and the heartbeats agents send.
import { Elysia } from "elysia";
import * as v from "valibot";
import { formatIssues } from "../config/problems.ts";
import { heartbeatSchema } from "../fleet/heartbeat.ts";
import { fleetLimits, fleetQueue, fleetStatus } from "../fleet/status.ts";
import type { Runtime } from "../runtime.ts";
import { jsonError } from "./errors.ts";

export function fleetSurface(rt: Runtime) {
  return new Elysia({ name: "fleet" })
    .get("/fleet/status", () => fleetStatus(rt.registry, rt.queues, rt.pins, rt.live.status()))
    .get("/fleet/queue", () => fleetQueue(rt.registry, rt.queues, rt.toolRepairs))
    .get("/fleet/limits", () => fleetLimits(rt.registry, rt.queues, rt.pins, rt.live.config))
    .post("/heartbeat", ({ body, request, server }) => {
      const parsed = v.safeParse(heartbeatSchema, body);
      if (!parsed.success) return jsonError(400, `invalid heartbeat: ${formatIssues(parsed.issues, heartbeatSchema).join("; ")}`);
      const node = rt.registry.heartbeat(parsed.output, server?.requestIP(request)?.address ?? null);
      return { status: "ok", node_status: node.status };
    });
}
