// Embedding weights on disk but nothing to serve them: the operator meant to
// use that embedding backend and it does not run. Ollama Herd's agents say
// backend_available false when the runtime is not installed, herd's when the
// node's server does not answer. For text embeddings nomic-embed-text falls
// back to Ollama's inference slots; vision embedding requests fail outright.
import { fold, type HealthCheck, type NodeInput, type Problem } from "../types.ts";

interface Backend {
  id: string;
  name: string;
  status: (node: NodeInput) => { backend_available: boolean; cached_model_count: number } | null | undefined;
  /** What is cached, and what is missing, in the finding's words. */
  missing: string;
  fix: (node: string) => string;
  ok: string;
}

function embeddingBackendMissing(b: Backend): HealthCheck {
  return {
    id: b.id,
    name: b.name,
    run({ nodes }) {
      const problems = nodes.flatMap((node): Problem[] => {
        const status = b.status(node);
        if (node.status === "offline" || !status || status.backend_available || status.cached_model_count === 0) return [];
        const finding = `${node.id}: ${status.cached_model_count} ${b.missing}`;
        return [{ severity: "warning", node: node.id, finding, recommendation: b.fix(node.id), details: { ...status } }];
      });
      return fold(problems, b.ok);
    },
  };
}

export const textEmbeddingBackendMissing = embeddingBackendMissing({
  id: "text_embedding_backend_missing",
  name: "Text embedding backend",
  status: (node) => node.report.text_embedding_status,
  missing: "text embedding model(s) cached but no text embedding server runs (fastembed not installed, or the server not started)",
  fix: (node) => `start the native text embedding server on ${node} (it needs fastembed), so embeddings run outside Ollama's queue.`,
  ok: "every node with text embedding weights can serve them",
});

export const visionBackendMissing = embeddingBackendMissing({
  id: "vision_backend_missing",
  name: "Vision embedding backend",
  status: (node) => node.report.vision_embedding_status,
  missing: "vision embedding model(s) cached but no vision embedding server runs (onnxruntime not installed, or the server not started)",
  fix: (node) => `start the vision embedding server on ${node} (it needs onnxruntime), or delete the cached weights.`,
  ok: "every node with vision embedding weights can serve them",
});
