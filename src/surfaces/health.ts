// GET /healthz: 200 once the router is serving, with what an operator or a
// load balancer wants to know at a glance; 503 while starting or stopping.
import { Elysia } from "elysia";
import type { Runtime } from "../runtime.ts";
import { VERSION } from "../version.ts";

export function healthSurface(rt: Runtime) {
  return new Elysia({ name: "health" })
    .get("/healthz", () => {
      const nodes = rt.registry.all();
      const body = {
        status: rt.ready ? "ok" : "starting",
        version: VERSION,
        uptime_s: Math.round((Date.now() - rt.startedAt) / 1000),
        nodes_total: nodes.length,
        nodes_online: nodes.filter((n) => n.status === "online").length,
        config_hash: rt.live.current.source.hash,
        config_error: rt.live.status().last_error?.message ?? null,
      };
      return Response.json(body, { status: rt.ready ? 200 : 503 });
    });
}
