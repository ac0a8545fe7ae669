// GET /healthz: 200 once the router is serving, with what an operator or a
// load balancer wants to know at a glance; 503 while starting or stopping, or
// when the agent fleet's pane backend is unreachable (docs/agents.md). A fleet
// that cannot serve (no node online, no Ollama answering) or a refused config
// edit is "degraded" with its reasons, still 200: the router itself is alive.
import { Elysia } from "elysia";
import type { AgentFleet } from "../agents/fleet.ts";
import { routeFacts } from "../auth/route-facts.ts";
import type { LiveConfig } from "../config/live.ts";
import { ollamaDown, START_OLLAMA } from "../fleet/ollama-down.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
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
      // With agent profiles configured, an unreachable pane backend (tmux) degrades the router.
      const agents = await rt.agents.health();
      const healthy = rt.ready && (agents?.ok ?? true);
      const reasons = degradedReasons(rt.registry, rt.live);
      const body = {
        status: !rt.ready ? "starting" : healthy && !reasons.length ? "ok" : "degraded",
        reasons,
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

/** Why the fleet cannot serve, or not as configured; empty when it can. */
function degradedReasons(registry: Registry, live: LiveConfig): string[] {
  const nodes = registry.all();
  const reasons: string[] = [];
  const online = nodes.filter((n) => n.status === "online");
  // A fleet with no node at all is a setup (an agents-only router, one waiting for its first agent), not a fault;
  // one node down among others that serve is the Health page's to report.
  const serves = (n: NodeRecord) => n.ollama?.reachable || n.report.mlx_servers?.some((m) => m.status === "healthy");
  if (nodes.length && !online.some(serves)) {
    reasons.push(online.length ? "no online node reaches its Ollama (nor runs a healthy MLX server)" : `no node is online (${nodes.length} known)`);
    for (const d of ollamaDown(nodes, (n) => registry.shownOllamaUrl(n))) reasons.push(`${d.finding}; ${START_OLLAMA}`);
  }
  const error = live.status().last_error;
  if (error) reasons.push(`the last config edit was refused (${error.message}); still running hash ${live.current.source.hash}`);
  return reasons;
}
