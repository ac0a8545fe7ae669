// An mlx_lm.server that is not healthy serves nothing: its model is missing
// from the fleet until the agent brings it back.
import { fold, type HealthCheck, type Problem } from "../types.ts";

// quarantined: it crashed over and over and is held back; the others may come back on their own.
const SEVERITY = { unhealthy: "warning", memory_blocked: "warning", stopped: "warning", quarantined: "critical" } as const;

export const mlxServerUnhealthy: HealthCheck = {
  id: "mlx_server_unhealthy",
  name: "MLX servers",
  run({ nodes }) {
    const problems: Problem[] = nodes.flatMap((node) =>
      node.status === "offline"
        ? []
        : (node.report.mlx_servers ?? []).flatMap((server): Problem[] => {
            // Starting and loading are a server on its way (a big model takes minutes to load, longer to download).
            if (server.status === "healthy" || server.status === "starting" || server.status === "loading") return [];
            return [
              {
                severity: SEVERITY[server.status],
                node: node.id,
                finding: `${node.id}: MLX ${server.model} on :${server.port} is ${server.status}${server.status_reason ? ` (${server.status_reason})` : ""}`,
                recommendation:
                  server.status === "memory_blocked"
                    ? `free memory on ${node.id} (unload Ollama models) or configure a smaller MLX model.`
                    : `check mlx_lm.server's log on ${node.id}; the node agent restarts it.`,
                details: { port: server.port, model: server.model, status: server.status, status_reason: server.status_reason },
              },
            ];
          }),
    );
    return fold(problems, "every MLX server is healthy (or starting, or loading)");
  },
};
