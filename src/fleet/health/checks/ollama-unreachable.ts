// A node can be up (its agent reports) while its Ollama is not: it gets no
// traffic, and with no Ollama anywhere the fleet serves nothing at all.
import { START_OLLAMA } from "../../ollama-down.ts";
import { fold, type HealthCheck } from "../types.ts";

export const ollamaUnreachable: HealthCheck = {
  id: "ollama_unreachable",
  name: "Ollama reachable",
  run({ nodes, ollamaDown }) {
    // An offline node's is nodes_offline's finding already, and its last report is stale.
    const upNodes = nodes.filter((n) => n.status !== "offline");
    const up = new Set(upNodes.map((n) => n.id));
    const reached = upNodes.filter((n) => n.ollama?.reachable).length;
    // Folded into one finding, `; `-separated: the fleet-wide part is said once, before the first.
    const problems = ollamaDown.filter((d) => up.has(d.node)).map(({ node, finding }, i) => ({
      severity: reached ? ("warning" as const) : ("critical" as const),
      node,
      finding: reached || i > 0 ? finding : `no node reaches its Ollama: ${finding}`,
      recommendation: `${START_OLLAMA}, or fix the node's ollama address in the config.`,
    }));
    return fold(problems, `${reached} node(s) reach their Ollama`);
  },
};
