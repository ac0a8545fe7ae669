// What the router's requests to the services a node runs beside Ollama share (image generation,
// transcription, native embedding servers): the nodes that can take one, spread by the jobs this
// router already has on each; one POST with a deadline; the X-Fleet-* headers and the trace.
import { type Caller, traceTags } from "../auth/caller.ts";
import type { Config } from "../config/schema.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { fleetHeaders } from "../pipeline/headers.ts";
import type { Runtime } from "../runtime.ts";
import { newRequestId } from "../store/traces.ts";
import { describeFetchError } from "./ollama.ts";

/** A request that failed, with the status the client gets (and when to retry, if that is known). */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retries = 0,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

/** The node could not be reached (or no longer offers the model): the next node may. */
export class Unreachable extends Error {}

/** Jobs this router has running on each node, so the next one goes to the least busy. */
export class Busy {
  private jobs = new Map<string, number>();

  of(nodeId: string): number {
    return this.jobs.get(nodeId) ?? 0;
  }

  async around<T>(nodeId: string, job: () => Promise<T>): Promise<T> {
    this.jobs.set(nodeId, this.of(nodeId) + 1);
    try {
      return await job();
    } finally {
      this.jobs.set(nodeId, this.of(nodeId) - 1);
    }
  }
}

/** Online, undrained nodes that offer what is asked: the least busy first, then those with the most free memory. */
export function serviceNodes(registry: Registry, busy: Busy, offers: (node: NodeRecord) => boolean): NodeRecord[] {
  const free = (n: NodeRecord) => n.report.memory?.available_gb ?? -1;
  return registry
    .all()
    .filter((n) => n.status === "online" && !registry.isDraining(n) && offers(n))
    .sort((a, b) => busy.of(a.id) - busy.of(b.id) || free(b) - free(a) || a.id.localeCompare(b.id));
}

/** Tries the nodes in order until one answers; an unreachable node is skipped, any answer (good or bad) is final. */
export async function firstAnswer<T>(nodes: NodeRecord[], busy: Busy, call: (node: NodeRecord) => Promise<T>): Promise<{ value: T; node: NodeRecord; retries: number }> {
  const skipped: string[] = [];
  for (const node of nodes) {
    try {
      return { value: await busy.around(node.id, () => call(node)), node, retries: skipped.length };
    } catch (e) {
      if (!(e instanceof Unreachable)) throw e instanceof ServiceError ? new ServiceError(e.status, e.message, skipped.length, e.retryAfterS) : e;
      skipped.push(`${node.id}: ${e.message}`);
    }
  }
  throw new ServiceError(503, `no node that offers it could be reached: ${skipped.join("; ")}`, skipped.length);
}

/** How the router calls a node agent's own service: its deadline, the node's credential (when the config has one), the client's signal. */
export interface ServiceCall {
  timeoutMs: number;
  credential?: string | null;
  signal: AbortSignal;
}

/**
 * POSTs to a node with a deadline for the whole answer. A network failure is Unreachable; running
 * out of time is a ServiceError with `timeoutStatus`; a client that goes away aborts it.
 */
export async function postToNode(url: string, body: string | FormData, opts: ServiceCall & { headers?: Record<string, string>; timeoutStatus: number }): Promise<{ res: Response; bytes: Uint8Array }> {
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const headers = opts.credential ? { ...opts.headers, authorization: `Bearer ${opts.credential}` } : opts.headers;
  try {
    const res = await fetch(url, { method: "POST", body, headers, signal: AbortSignal.any([opts.signal, deadline]) });
    return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
  } catch (e) {
    if (opts.signal.aborted) throw e;
    if (deadline.aborted) throw new ServiceError(opts.timeoutStatus, `no answer from ${new URL(url).host} within ${opts.timeoutMs} ms`);
    throw new Unreachable(`${new URL(url).host}: ${describeFetchError(e, opts.timeoutMs)}`);
  }
}

/** The error a node's service answered with ({"error": "..."}), or what its status says. */
export function errorOf(res: Response, bytes: Uint8Array): string {
  try {
    const json = JSON.parse(new TextDecoder().decode(bytes)) as { error?: unknown };
    const error = typeof json.error === "object" && json.error ? (json.error as { message?: unknown }).message : json.error;
    if (typeof error === "string" && error) return error;
  } catch {
    // not JSON: the status says it
  }
  return `HTTP ${res.status}`;
}

export interface Served {
  nodeId: string;
  model: string;
  /** X-Fleet-Backend: image, transcription, native, vision, or ollama. */
  backend: string;
  retries: number;
}

/**
 * Runs `job` as the client key's (auth.clients) request, charged like any inference request: a model
 * the key may not use is a 403, a key over its limits a 429.
 */
export async function asCaller<T>(caller: Caller | null, model: string, modelMap: Config["modelMap"], job: () => Promise<T>): Promise<T> {
  const refused = caller && (caller.modelRefusal(model, model, [], modelMap) ?? caller.enter());
  if (refused) throw new ServiceError(refused.status, refused.message, 0, refused.retryAfterS);
  try {
    return await job();
  } finally {
    caller?.leave();
  }
}

/** The headers of a failed service request: X-Fleet-* of no node, and Retry-After when the error knows it. */
export function errorHeaders(requested: string, error: ServiceError): Record<string, string> {
  const headers = serviceHeaders(requested, null, error.retries);
  return error.retryAfterS === undefined ? headers : { ...headers, "Retry-After": String(error.retryAfterS) };
}

/** The canonical X-Fleet-* headers of a service request: of the node that served it, or of none. */
export function serviceHeaders(requested: string, served: Served | null, retries = served?.retries ?? 0): Record<string, string> {
  return fleetHeaders(requested, served && { nodeId: served.nodeId, servedModel: served.model, backend: served.backend, fallback: false, score: null, contextOverflow: null }, retries);
}

export interface ServiceTrace {
  started: number;
  requested: string;
  kind: "image" | "transcription" | "embed";
  format: string;
  clientIp: string | null;
  tags: string[];
  caller: Caller | null;
  served: Served | null;
  error: ServiceError | null;
  aborted: boolean;
}

/**
 * Runs a service request and leaves its trace, success or failure; whatever goes wrong
 * reaches the caller as a ServiceError (a 502 unless the service said otherwise).
 */
export async function tracedService<T extends { served: Served }>(
  rt: Runtime,
  trace: Omit<ServiceTrace, "served" | "error" | "aborted">,
  signal: AbortSignal,
  run: () => Promise<T>,
): Promise<T> {
  try {
    const result = await run();
    traceService(rt, { ...trace, served: result.served, error: null, aborted: false });
    return result;
  } catch (e) {
    const error = e instanceof ServiceError ? e : new ServiceError(502, (e as Error).message);
    traceService(rt, { ...trace, served: null, error, aborted: signal.aborted });
    throw error;
  }
}

/** One trace row for a service request, success or failure, like the routed requests leave. */
export function traceService(rt: Runtime, t: ServiceTrace): void {
  rt.traces.record({
    request_id: newRequestId(),
    timestamp: Date.now() / 1000,
    model: t.served?.model ?? t.requested,
    original_model: t.requested,
    node_id: t.served?.nodeId ?? null,
    backend: t.served?.backend ?? null,
    kind: t.kind,
    original_format: t.format,
    stream: false,
    status: t.aborted ? "client_disconnected" : t.error ? "failed" : "completed",
    score: null,
    scores_breakdown: null,
    latency_ms: Math.round((performance.now() - t.started) * 10) / 10,
    time_to_first_token_ms: null,
    queue_wait_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    retry_count: t.served?.retries ?? t.error?.retries ?? 0,
    fallback_used: false,
    excluded_nodes: [],
    client_ip: t.clientIp,
    error_message: t.error?.message ?? null,
    tags: traceTags(t.tags, t.caller),
    resolution: null,
    adjustments: [],
  });
}
