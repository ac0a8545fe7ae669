// What a model can do (completion, tools, thinking, vision, …), as Ollama's
// /api/show says: asked of one node that has the model, once per model, and
// remembered. A lookup is bounded by LOOKUP_MS, so no request waits longer on
// it; one that failed (no node had the model, or none answered) is forgotten
// after RETRY_MS, so the model is asked about again.
import { mlxModelOf, reachableNodes } from "./catalog.ts";
import { modelKey } from "./model-name.ts";
import { onDisk, type Registry } from "./registry.ts";

const LOOKUP_MS = 2000;
const RETRY_MS = 30_000;
/** A bound on what is remembered, whatever names clients send. */
const MAX_MODELS = 1000;

export class ModelCapabilities {
  private readonly known = new Map<string, Promise<string[] | null>>();

  constructor(private readonly registry: Registry) {}

  /** The model's capabilities, or null when no node could say. */
  of(model: string): Promise<string[] | null> {
    const key = modelKey(model);
    const known = this.known.get(key);
    if (known) return known;
    if (this.known.size >= MAX_MODELS) this.known.delete(this.known.keys().next().value!);
    const asked = this.ask(model);
    this.known.set(key, asked);
    void asked.then((capabilities) => {
      if (!capabilities) setTimeout(() => this.known.get(key) === asked && this.known.delete(key), RETRY_MS).unref();
    });
    return asked;
  }

  /**
   * Whether Ollama's `think` may go to the model: Ollama refuses think:true unless /api/show lists
   * "thinking"; an MLX server takes it as a chat-template switch (enable_thinking) for any model.
   */
  async canThink(model: string): Promise<boolean> {
    if (mlxModelOf(this.registry, model)) return true;
    return (await this.of(model))?.includes("thinking") ?? false;
  }

  private async ask(model: string): Promise<string[] | null> {
    const node = reachableNodes(this.registry).find((n) => onDisk(n, model));
    const url = node && this.registry.ollamaUrl(node);
    if (!url) return null;
    try {
      const res = await fetch(new URL("/api/show", url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model }),
        signal: AbortSignal.timeout(LOOKUP_MS),
      });
      const body = (await res.json()) as { capabilities?: unknown };
      return res.ok && Array.isArray(body.capabilities) ? body.capabilities.filter((c): c is string => typeof c === "string") : null;
    } catch {
      return null;
    }
  }
}
