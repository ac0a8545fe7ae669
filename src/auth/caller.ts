// A request's client key at work: its trace tag, the models it may use, and the
// limits it draws on (requests per minute, requests in flight). The usage is
// kept per key name, so a config reload does not reset anybody's budget.
import type { Config } from "../config/schema.ts";
import { sameModel } from "../fleet/model-name.ts";
import { globToRegExp, resolveAlias } from "../router/aliases.ts";
import { ClientGate } from "../router/client-gate.ts";
import type { ClientKey, Refusal } from "../core/client-key.ts";
import type { ClientEntry } from "./credentials.ts";

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

  /**
   * Why this key may not use the model it asked for or one of its fallbacks, or null. A name passes when it,
   * what modelMap makes of it, or (for the model asked for) the local model a surface resolved it to matches.
   */
  modelRefusal(asked: string, resolved: string, fallbacks: string[], modelMap: Config["modelMap"]): Refusal | null {
    const allowed = this.client.models;
    if (!allowed) return null;
    const fits = (...names: string[]) => names.flatMap((n) => [n, resolveAlias(n, modelMap)]).some((n) => allowed.some((entry) => matches(entry, n)));
    const denied = fits(asked, resolved) ? fallbacks.find((m) => !fits(m)) : asked;
    if (denied === undefined) return null;
    return { status: 403, message: `key "${this.client.name}" may not use model "${denied}"; it may use ${allowed.map((m) => `"${m}"`).join(", ")} (auth.clients[].models)` };
  }

  enter(): Refusal | null {
    const { name, rateLimit, maxInFlight } = this.client;
    if (!this.usage.inFlight.enter(name, maxInFlight ?? 0)) {
      return { status: 429, message: `key "${name}" already has ${maxInFlight} requests in flight (auth.clients[].maxInFlight); retry when one has finished` };
    }
    const wait = rateLimit ? this.usage.take(name, rateLimit.requestsPerMinute) : 0;
    if (wait) {
      this.leave();
      return { status: 429, message: `key "${name}" is over its limit of ${rateLimit!.requestsPerMinute} requests per minute (auth.clients[].rateLimit); retry after ${wait} s`, retryAfterS: wait };
    }
    return null;
  }

  leave(): void {
    this.usage.inFlight.leave(this.client.name);
  }
}

// An entry without "*" names one model ("llama3.2" is "llama3.2:latest"); with one, it is a glob as in modelMap.
function matches(entry: string, model: string): boolean {
  if (entry.includes("*")) return globToRegExp(entry).test(model);
  return sameModel(entry, model);
}
