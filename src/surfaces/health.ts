// GET /healthz: 200 once the router is serving, with what an operator or a
// load balancer wants to know at a glance; 503 while starting or stopping, or
// when the agent fleet's pane backend is unreachable (docs/agents.md).
import { Elysia } from "elysia";
import type { AgentFleet } from "../agents/fleet.ts";
import { routeFacts } from "../auth/route-facts.ts";
import type { LiveConfig } from "../config/live.ts";
import type { Registry } from "../fleet/registry.ts";
import { VERSION } from "../version.ts";

/** What /healthz reports on. */
interface Health {
  agents: AgentFleet;
  live: LiveConfig;
  registry: Registry;
  /** Read at each probe: the router is ready once it serves. */
  ready: boolean;
  startedAt: number;
}

export function healthSurface(rt: Health) {
  return new Elysia({ name: "health" })
    .use(routeFacts)
    .get("/healthz", async () => {
      const nodes = rt.registry.all();
      // With agent profiles configured, an unreachable pane backend (tmux) degrades the router (seed 004).
      const agents = await rt.agents.health();
      const healthy = rt.ready && (agents?.ok ?? true);
      const body = {
        status: !rt.ready ? "starting" : healthy ? "ok" : "degraded",
        version: VERSION,
        uptime_s: Math.round((Date.now() - rt.startedAt) / 1000),
        nodes_total: nodes.length,
        nodes_online: nodes.filter((n) => n.status === "online").length,
        config_hash: rt.live.current.source.hash,
        config_error: rt.live.status().last_error?.message ?? null,
        ...agents?.fields,
      };
      return Response.json(body, { status: healthy ? 200 : 503 });
    }, { facts: { access: "open", body: "json", errors: "herd" } });
}
