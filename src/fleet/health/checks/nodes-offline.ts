// A node the config declares that is not reporting gets no traffic: its
// models are missing from the fleet until it is back.
import { duration, fold, type HealthCheck, type Problem } from "../types.ts";

export const nodesOffline: HealthCheck = {
  id: "nodes_offline",
  name: "Nodes offline",
  run({ nodes, now }) {
    if (!nodes.length) {
      return fold([{ severity: "warning", finding: "no node is declared or reporting", recommendation: "add nodes to the config's nodes, or start `herd node` on each Mac" }], "");
    }
    const problems: Problem[] = [];
    for (const node of nodes) {
      const silent = node.lastSeen === null ? "never reached" : `silent for ${duration(now - node.lastSeen)}`;
      const why = node.statusReason ? ` (${node.statusReason})` : "";
      if (node.status === "degraded") {
        problems.push({ severity: "warning", node: node.id, finding: `${node.id} is degraded: ${silent}${why}`, recommendation: `check ${node.id}'s network and its herd node agent.` });
      } else if (node.status === "offline" && node.declared) {
        problems.push({
          severity: "critical",
          node: node.id,
          finding: `${node.id} is offline: ${silent}${why}`,
          recommendation: `start herd node (or Ollama) on ${node.id} and check that the Mac is awake and on the network; remove it from the config if it is gone for good.`,
        });
      } else if (node.status === "offline") {
        problems.push({
          severity: "info",
          node: node.id,
          finding: `${node.id} (not in the config) stopped reporting: ${silent}`,
          recommendation: `restart its agent, or ignore it: herd forgets undeclared nodes when it restarts.`,
        });
      }
    }
    return fold(problems, `all ${nodes.length} node(s) online`);
  },
};
