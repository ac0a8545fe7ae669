// The vision embedding models a node's vision server serves (Ollama Herd's node/embedding_models.py at 32cfc92), by
// the names clients and configs give them: what routing, the node agent and the trust rules for heartbeats all
// compare.

/** Ollama Herd's vision models (node/embedding_models.py) and the short names its router takes for them (server/routes/embedding_compat.py). */
export const VISION_MODELS: Record<string, string> = {
  "dinov2-vit-s14": "dinov2-vit-s14",
  "siglip2-base": "siglip2-base",
  "clip-vit-b32": "clip-vit-b32",
  dinov2: "dinov2-vit-s14",
  clip: "clip-vit-b32",
  siglip: "siglip2-base",
  siglip2: "siglip2-base",
};

/** The name a vision server knows `model` by: Ollama Herd's own for its short names, else the name given. */
export function visionModelName(model: string): string {
  return VISION_MODELS[model.trim().toLowerCase().replace(/:latest$/, "")] ?? model;
}

