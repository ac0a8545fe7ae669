// What a model is, as Ollama's /api/show says: what it can do (completion,
// tools, thinking, vision, …) and the context it was trained for (model_info's
// <arch>.context_length: a larger num_ctx buys nothing, the prompt is cut to
// it), and the file its weights are in (the modelfile's FROM blob: Ollama evicts idle models in the order of that
// path, fleet/finish-time.ts). Asked of one node that has the model, once per model, and remembered. A lookup is bounded by LOOKUP_MS, so no request waits longer on
// it; one that failed (no node had the model, or none answered) is forgotten
// after RETRY_MS, so the model is asked about again.
import { type AnswerCap, responseJson } from "../core/capped-body.ts";
import { mlxModelOf, reachableNodes } from "./catalog.ts";
import { modelKey } from "./model-name.ts";
import { onDisk, type Registry } from "./registry.ts";

const LOOKUP_MS = 2000;
const RETRY_MS = 30_000;
/** A bound on what is remembered, whatever names clients send. */
const MAX_MODELS = 1000;
/** The lookups one askLoaded begins at most: a node that lists a thousand loaded models is asked about them a few at a time. */
const ASK_LOADED_AT_ONCE = 8;

export interface ModelFact {
  capabilities: string[];
  /** The trained context length; null when /api/show does not say. */
  contextLength: number | null;
  /** The weights' blob file (`sha256-<hex>`, the modelfile's FROM); null when /api/show does not say. */
  blob: string | null;
}

/** The FROM line of a modelfile that names a blob, as Ollama's /api/show writes it: `FROM <models>/blobs/sha256-<hex>`. */
const FROM_BLOB = /^FROM \S*\/blobs\/(sha256-[0-9a-f]{64})$/m;

export class ModelFacts {
  private readonly known = new Map<string, Promise<ModelFact | null>>();
  /** The lookups that have answered, for a caller that cannot wait (the ranking). */
  private readonly answered = new Map<string, ModelFact | null>();

  /** `cap`: how large an answer of /api/show may be (server.maxNodeAnswerMb), read live. */
  constructor(
    private readonly registry: Registry,
    private readonly cap: () => AnswerCap,
  ) {}

  /** What /api/show says of the model, or null when no node could say. */
  of(model: string): Promise<ModelFact | null> {
    const key = modelKey(model);
    const known = this.known.get(key);
    if (known) return known;
    if (this.known.size >= MAX_MODELS) {
      const oldest = this.known.keys().next().value!;
      this.known.delete(oldest);
      this.answered.delete(oldest);
    }
    const asked = this.ask(model);
    this.known.set(key, asked);
    void asked.then((fact) => {
      if (this.known.get(key) === asked) this.answered.set(key, fact);
      if (!fact) setTimeout(() => this.known.get(key) === asked && this.known.delete(key) && this.answered.delete(key), RETRY_MS).unref();
    });
    return asked;
  }

  /** Asks after every model loaded on a node that herd has not asked about: an eviction's order needs their blobs before it is priced. */
  askLoaded(): void {
    let begun = 0;
    for (const node of this.registry.all()) {
      for (const m of node.ollama?.models_loaded ?? []) {
        if (begun >= ASK_LOADED_AT_ONCE) return;
        if (this.known.has(modelKey(m.name))) continue;
        void this.of(m.name);
        begun++;
      }
    }
  }

  /** What a lookup has said of the model, without waiting (one is begun when none has been); null until one has. */
  answeredOf(model: string): ModelFact | null {
    const key = modelKey(model);
    if (!this.known.has(key)) void this.of(model);
    return this.answered.get(key) ?? null;
  }

  /**
   * Whether Ollama's `think` may go to the model: Ollama refuses think:true unless /api/show lists
   * "thinking"; an MLX server takes it as a chat-template switch (enable_thinking) for any model.
   */
  async canThink(model: string): Promise<boolean> {
    if (mlxModelOf(this.registry, model)) return true;
    return (await this.of(model))?.capabilities.includes("thinking") ?? false;
  }

  /** The context the model was trained for; null for an MLX model or when no node could say. */
  async contextLength(model: string): Promise<number | null> {
    if (mlxModelOf(this.registry, model)) return null;
    return (await this.of(model))?.contextLength ?? null;
  }

  private async ask(model: string): Promise<ModelFact | null> {
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
      const body = (await responseJson(res, this.cap())) as { capabilities?: unknown; model_info?: Record<string, unknown>; modelfile?: unknown };
      if (!res.ok || !Array.isArray(body.capabilities)) return null;
      const trained = Object.entries(body.model_info ?? {}).find(([key]) => key.endsWith(".context_length"))?.[1];
      return {
        capabilities: body.capabilities.filter((c): c is string => typeof c === "string"),
        contextLength: typeof trained === "number" && trained > 0 ? trained : null,
        blob: typeof body.modelfile === "string" ? (FROM_BLOB.exec(body.modelfile)?.[1] ?? null) : null,
      };
    } catch {
      return null;
    }
  }
}
