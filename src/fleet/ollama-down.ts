// Nodes whose Ollama does not answer, and how to start one: the Health page,
// /healthz and a request with nowhere to go all say the same.
import type { NodeRecord } from "./registry.ts";

export const START_OLLAMA = "start Ollama with `ollama serve` (on a Mac the router reaches over the network: `OLLAMA_HOST=0.0.0.0 ollama serve`)";

export interface OllamaDown {
  node: string;
  /** "this-mac: Ollama at http://127.0.0.1:11434 does not answer (connection refused)" */
  finding: string;
}

/** Each node whose last report or poll says its Ollama does not answer. */
export function ollamaDown(nodes: NodeRecord[], urlOf: (node: NodeRecord) => string | null): OllamaDown[] {
  return nodes
    .filter((n) => n.ollama && !n.ollama.reachable)
    .map((n) => ({ node: n.id, finding: `${n.id}: Ollama at ${urlOf(n) ?? "an unknown address"} does not answer${n.ollama!.error ? ` (${n.ollama!.error})` : ""}` }));
}
