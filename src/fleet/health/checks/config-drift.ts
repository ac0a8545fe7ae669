// Every Mac should run the router's config: a node whose agent runs another
// (a copy not yet deployed, or one its agent refused on reload and so runs an
// older one) may run other MLX servers, drain flags or credentials than the fleet's.
import { nodeRuns } from "../../status.ts";
import { fold, type HealthCheck, type Problem } from "../types.ts";

export const configDrift: HealthCheck = {
  id: "config_drift",
  name: "Config drift",
  run({ nodes, configStatus }) {
    const router = configStatus.hash;
    const problems: Problem[] = [];
    const agents = nodes.filter((n) => n.status !== "offline").map((n) => ({ node: n, runs: nodeRuns(n, router) })).filter((a) => a.runs.config_hash !== null);
    for (const { node, runs } of agents) {
      // The router's own agent shares its file: config_reload_error already says that one's refusal.
      if (runs.config_error !== null && runs.config_error !== configStatus.last_error?.message) {
        problems.push({
          severity: "warning",
          node: node.id,
          finding: `${node.id}'s agent refused its copy of the config (${runs.config_error}); it still runs hash ${runs.config_hash}${runs.config_drift ? `, the router ${router}` : ""}`,
          recommendation: `fix the config file on ${node.id} (\`herd check-config FILE\` there lists every problem) or deploy the router's again; its agent reloads it on save.`,
          details: { config_hash: runs.config_hash, config_error: runs.config_error },
        });
      } else if (runs.config_drift) {
        problems.push({
          severity: "warning",
          node: node.id,
          finding: `${node.id} runs config hash ${runs.config_hash}, the router ${router}`,
          recommendation: `deploy the router's config to ${node.id} (the file and every file it imports; \`herd plan FILE --router URL\` there shows what its copy changes); its agent reloads it on save.`,
          details: { config_hash: runs.config_hash },
        });
      }
    }
    return fold(problems, agents.length ? `all ${agents.length} agent(s) run the router's config (hash ${router})` : "no node agent reports its config");
  },
};
