// A request's client key at work: its trace tag, the models it may use, and the
// limits it draws on (requests per minute, requests in flight). The usage is
// kept per key name, so a config reload does not reset anybody's budget.
import type { Config } from "../config/schema.ts";
import { normalizeModelName, sameModel } from "../fleet/model-name.ts";
import { globToRegExp, resolveAlias } from "../router/aliases.ts";
import { ClientGate } from "../router/client-gate.ts";
import type { ClientKey, Refusal } from "../core/client-key.ts";
import type { ClientEntry } from "../config/credentials/keys.ts";

/** Every key's budget: a token bucket for its requests per minute, and its requests in flight. */
export class KeyUsage {
  private buckets = new Map<string, { tokens: number; at: number }>();
  readonly inFlight = new ClientGate();

  constructor(private readonly now: () => number = Date.now) {}

  /** Takes one request from `name`'s budget: 0, or the whole seconds until one is available. */
  take(name: string, perMinute: number): number {
    const now = this.now();
    const bucket = this.buckets.get(name) ?? { tokens: perMinute, at: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.at) / 60_000) * perMinute);
    bucket.at = now;
    this.buckets.set(name, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / perMinute));
  }
}

/** A client key as the pipeline reads it (core/client-key.ts), checked against the config's auth.clients. */
export class Caller implements ClientKey {
  constructor(
    readonly client: ClientEntry,
    private readonly usage: KeyUsage,
  ) {}

  get tag(): string {
    return `key:${this.client.name}`;
  }

  /** Whether the key's models allow it to be served `model` (a name as the nodes hold it, after modelMap). */
  mayServe(model: string): boolean {
    return this.client.models?.some((entry) => matches(entry, model)) ?? true;
  }

  /** Whether a model no node has may be pulled for this key's requests (features.autoPull): only with the "pull" permission. */
  get mayPull(): boolean {
    return this.client.permissions?.includes("pull") ?? false;
  }

  /**
   * Why this key may not use the model it asked for or one of its fallbacks, or null. What is checked is what would
   * serve: `resolved` (the local model a surface resolved the asked name to) and each fallback, after modelMap. So an
   * allowed alias or claude-* id still needs an allowed model behind it.
   */
  modelRefusal(asked: string, resolved: string, fallbacks: string[], modelMap: Config["modelMap"]): Refusal | null {
    const allowed = this.client.models;
    if (!allowed) return null;
    const named = [asked, ...fallbacks];
    const served = [resolved, ...fallbacks].map((m) => resolveAlias(m, modelMap));
    const denied = served.findIndex((m) => !this.mayServe(m));
    if (denied === -1) return null;
    return this.modelDenied(named[denied]!, served[denied]!);
  }

  /** The 403 for a model the key may not use: `name` as the client sent it, `served` what it stands for. */
  modelDenied(name: string, served = name): Refusal {
    const allowed = (this.client.models ?? []).map((m) => `"${m}"`).join(", ");
    const behind = sameModel(name, served) ? "" : ` (it stands for "${served}")`;
    return { status: 403, message: `key "${this.client.name}" may not use model "${name}"${behind}; it may use ${allowed} (auth.clients[].models)` };
  }

  enter(): Refusal | null {
    const { name, maxInFlight } = this.client;
    if (!this.usage.inFlight.enter(name, maxInFlight ?? 0)) {
      return { status: 429, message: `key "${name}" already has ${maxInFlight} requests in flight (auth.clients[].maxInFlight); retry when one has finished` };
    }
    const over = this.take();
    if (over) this.leave();
    return over;
  }

  /**
   * Takes one request from the key's per-minute budget, or says why not. Inference takes it through enter(); a
   * route that runs no model but does work for the key (count_tokens, /api/show) takes it alone.
   */
  take(): Refusal | null {
    const { name, rateLimit } = this.client;
    const wait = rateLimit ? this.usage.take(name, rateLimit.requestsPerMinute) : 0;
    if (!wait) return null;
    return { status: 429, message: `key "${name}" is over its limit of ${rateLimit!.requestsPerMinute} requests per minute (auth.clients[].rateLimit); retry after ${wait} s`, retryAfterS: wait };
  }

  leave(): void {
    this.usage.inFlight.leave(this.client.name);
  }
}

// An entry without "*" names one model ("llama3.2" is "llama3.2:latest"); with one, it is a glob as in modelMap,
// tried on the name as given and as served ("qwen3:*" allows "qwen3", which is "qwen3:latest").
function matches(entry: string, model: string): boolean {
  if (!entry.includes("*")) return sameModel(entry, model);
  const glob = globToRegExp(entry);
  return glob.test(model) || glob.test(normalizeModelName(model));
}
