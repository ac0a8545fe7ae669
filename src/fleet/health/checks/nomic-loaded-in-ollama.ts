// The native text embedding server runs, yet nomic-embed-text still holds an
// Ollama slot: harmless, it unloads when its keep_alive runs out.
import { loadedOn } from "../../registry.ts";
import { fold, type HealthCheck, type Problem } from "../types.ts";
import { NOMIC } from "./text-embedding-ollama-bypass.ts";

export const nomicLoadedInOllama: HealthCheck = {
  id: "nomic_loaded_in_ollama",
  name: "nomic-embed-text in Ollama",
  run({ nodes }) {
    const problems: Problem[] = nodes
      .filter((n) => n.status !== "offline" && n.report.text_embedding && loadedOn(n, NOMIC))
      .map((node): Problem => ({
        severity: "info",
        node: node.id,
        finding: `${node.id}: ${NOMIC} is still loaded in Ollama although the native server (port ${node.report.text_embedding_port ?? "?"}) serves it`,
        recommendation: `nothing to do: it unloads when its keep_alive expires (or run \`ollama stop ${NOMIC}\` on ${node.id} now).`,
      }));
    return fold(problems, `${NOMIC} is not held in Ollama where the native server runs`);
  },
};
