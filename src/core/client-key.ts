// A request's client key, as the pipeline reads it: admission charges it and
// the trace names it. The guard makes one from the key a request came with
// (auth/caller.ts); the pipeline knows only this, not how keys are checked.

/** Why a key may not send a request now. */
export interface Refusal {
  status: 403 | 429;
  message: string;
  /** For a 429: when to retry; absent when it depends on another request finishing. */
  retryAfterS?: number;
}

/** What the request's client key lets the router do for it; null when no key restricts it (open mode, the admin). */
export interface KeyGrant {
  /** Whether a model no node has may be pulled for it (features.autoPull). */
  readonly mayPull: boolean;
  /** Whether its models allow it to be served `model`: a stand-in must be allowed as much as the model asked for. */
  mayServe(model: string): boolean;
}

export interface ClientKey extends KeyGrant {
  /** The trace tag that says which key sent a request ("key:<name>"). */
  readonly tag: string;
  /** Why this key may not use the model asked for (resolved to `resolved`) or one of its fallbacks, or null. */
  modelRefusal(asked: string, resolved: string, fallbacks: string[], modelMap: Readonly<Record<string, string>>): Refusal | null;
  /** Takes a place for one inference request, or says why not; a place taken is given back with leave(). */
  enter(): Refusal | null;
  /** Takes one request from the key's per-minute budget for work done for it beside its request (a summary), or says why not. */
  take(): Refusal | null;
  leave(): void;
}
