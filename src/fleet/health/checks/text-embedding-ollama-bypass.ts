// nomic-embed-text served by Ollama while the node's native embedding server
// is down: every embedding takes an inference slot from the chat models.
import { loadedOn } from "../../registry.ts";
import { fold, type HealthCheck, type Problem } from "../types.ts";

export const NOMIC = "nomic-embed-text";

export const textEmbeddingOllamaBypass: HealthCheck = {
  id: "text_embedding_ollama_bypass",
  name: "Text embeddings through Ollama",
  run({ nodes }) {
    // Only nodes whose agent reports the native server (text_embedding_status) can have it down.
    const problems: Problem[] = nodes
      .filter((n) => n.status !== "offline" && n.report.text_embedding_status && !n.report.text_embedding && loadedOn(n, NOMIC))
      .map((node): Problem => ({
        severity: "warning",
        node: node.id,
        finding: `${node.id}: ${NOMIC} runs in Ollama because the native text embedding server is not running; embeddings compete with LLM inference`,
        recommendation: `start the native text embedding server on ${node.id} (restart its node agent; see text_embedding_backend_missing if fastembed is missing).`,
      }));
    return fold(problems, `no node serves ${NOMIC} through Ollama for want of the native server`);
  },
};
