// One request end to end: dispatch it, relay the node's lines to the client in
// the surface's wire format, and leave a trace. Headers go out only once a
// node has answered, so X-Fleet-Node always names the node that served.
import { type Caller, traceTags } from "../auth/caller.ts";
import { eitherSignal } from "../abort.ts";
import type { OllamaLine } from "../backends/ollama.ts";
import { RouteError } from "../errors.ts";
import type { Runtime } from "../runtime.ts";
import { newRequestId, type Trace, type TraceStatus } from "../store/traces.ts";
import { budgetHeaders } from "./body-rules.ts";
import { type RouteRequest, type Routed, dispatch } from "./dispatch.ts";
import { relay } from "./relay.ts";
import { ToolCallRepair, offeredTools } from "./tool-repair.ts";

/** How a surface writes the node's lines in its own wire format. */
export interface Encoder {
  contentType: string;
  /** Bytes for one line of the node's answer ("" to send nothing). */
  line(line: OllamaLine): string;
  /** Bytes after the node's done marker (e.g. SSE's `data: [DONE]`). */
  end(): string;
  /** Bytes that end a stream that failed after its first byte. */
  fail(message: string): string;
  /** A whole error response before anything was sent. */
  error(status: number, message: string, headers: Record<string, string>): Response;
  /** Bytes to send when the node has been silent this long (Anthropic's `ping`), so clients know the stream is alive. */
  keepAlive?: { everyMs: number; bytes: string };
}

export interface RouteMeta {
  tags: string[];
  stream: boolean;
  clientIp: string | null;
  /** The client key the request came with (auth.clients; see callerOf), or null when herd is open. */
  caller: Caller | null;
}

export async function route(rt: Runtime, req: RouteRequest, encoder: Encoder, meta: RouteMeta): Promise<Response> {
  const started = performance.now();
  const requested = req.requested ?? req.model;
  const trace: Trace = {
    request_id: newRequestId(),
    timestamp: Date.now() / 1000,
    model: req.model,
    original_model: requested,
    node_id: null,
    backend: null,
    kind: req.kind,
    original_format: req.surface,
    stream: meta.stream,
    status: "failed",
    score: null,
    scores_breakdown: null,
    latency_ms: null,
    time_to_first_token_ms: null,
    queue_wait_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    retry_count: 0,
    fallback_used: false,
    excluded_nodes: [],
    client_ip: meta.clientIp,
    error_message: null,
    tags: traceTags(meta.tags, meta.caller),
    resolution: req.resolution ?? null,
    adjustments: req.adjustments ?? [],
  };
  const client = meta.clientIp ?? "unknown";
  const { clientMaxInFlight, clientRetryAfterSeconds } = rt.live.config.routing;
  const { caller } = meta;
  const refused = caller && (caller.modelRefusal(requested, req.model, req.fallbackModels, rt.live.config.modelMap) ?? caller.enter());
  if (refused) {
    rt.traces.record({ ...trace, status: "rejected", error_message: refused.message, latency_ms: ms(started) });
    const retry: Record<string, string> = refused.status === 429 ? { "Retry-After": String(refused.retryAfterS ?? clientRetryAfterSeconds) } : {};
    return encoder.error(refused.status, refused.message, { ...fleetHeaders(requested, null, 0), ...retry });
  }
  if (!rt.clients.enter(client, clientMaxInFlight)) {
    caller?.leave();
    const message = `client ${client} already has ${clientMaxInFlight} requests in flight (routing.clientMaxInFlight); retry after ${clientRetryAfterSeconds} s`;
    rt.traces.record({ ...trace, status: "rejected", error_message: message, latency_ms: ms(started) });
    return encoder.error(429, message, { ...fleetHeaders(requested, null, 0), "Retry-After": String(clientRetryAfterSeconds) });
  }
  let left = false;
  const leave = () => {
    if (!left) {
      rt.clients.leave(client);
      caller?.leave();
    }
    left = true;
  };
  let routed: Routed;
  // A stop that runs out of grace ends the wait for a node too (with its RouteError, a 503).
  const dispatching = eitherSignal(req.signal, rt.shutdown.signal);
  try {
    routed = await dispatch({ registry: rt.registry, queues: rt.queues, ordering: rt.ordering, pulls: rt.pulls, config: rt.toggles.apply(rt.live.config) }, req, dispatching.signal);
  } catch (e) {
    leave();
    const error = e instanceof RouteError ? e : new RouteError(502, (e as Error).message);
    rt.traces.record({ ...trace, status: req.signal.aborted ? "client_disconnected" : "failed", error_message: error.message, retry_count: error.retries, excluded_nodes: error.excluded, latency_ms: ms(started) });
    const headers = fleetHeaders(requested, null, error.retries);
    if (error.retryAfterS) headers["Retry-After"] = String(error.retryAfterS);
    return encoder.error(error.status, error.message, headers);
  } finally {
    // From here the relay follows the client (its stream's cancel) and the stop (its own listener).
    dispatching.release();
  }
  Object.assign(trace, {
    model: routed.servedModel,
    node_id: routed.nodeId,
    backend: routed.backend,
    score: routed.score,
    scores_breakdown: routed.breakdown,
    retry_count: routed.retries,
    fallback_used: routed.fallback,
    excluded_nodes: routed.excluded,
    adjustments: [...trace.adjustments, ...routed.adjustments],
    queue_wait_ms: round(routed.slot.waitedMs),
    time_to_first_token_ms: ms(started),
  });
  // The node refused the request itself (a 4xx, e.g. a model that cannot embed): the client gets it in its own format.
  if (routed.call.status >= 400) {
    routed.call.cancel();
    const message = routed.call.first.json.error ?? `node ${routed.nodeId} answered HTTP ${routed.call.status}`;
    routed.slot.release("failed");
    leave();
    rt.traces.record({ ...trace, status: "failed", error_message: message, latency_ms: ms(started) });
    return encoder.error(routed.call.status, message, fleetHeaders(requested, routed, routed.retries));
  }
  const finish = (status: TraceStatus, done: OllamaLine["json"] | null, error: string | null) => {
    const latency = ms(started);
    routed.slot.release(status === "completed" ? "completed" : "failed", latency);
    leave();
    rt.traces.record({
      ...trace,
      status,
      latency_ms: latency,
      prompt_tokens: done?.prompt_eval_count ?? null,
      completion_tokens: done?.eval_count ?? null,
      error_message: error,
    });
  };
  // A non-streaming answer is whole in its first line, so its budget diagnostics can go in the headers.
  const budget = routed.thinkingBudget && !meta.stream && routed.call.first.json.done ? budgetHeaders(routed.thinkingBudget, routed.call.first.json) : {};
  const tools = req.kind === "chat" ? offeredTools(req.body) : [];
  const repair = tools.length ? new ToolCallRepair(tools, rt.toolRepairs.counter(routed.servedModel)) : null;
  return new Response(relay(routed, req.kind, encoder, repair, finish, rt.shutdown.signal), {
    status: routed.call.status,
    headers: { "content-type": encoder.contentType, ...fleetHeaders(requested, routed, routed.retries), ...budget },
  });
}

export function fleetHeaders(requested: string, routed: Routed | null, retries: number): Record<string, string> {
  const headers: Record<string, string> = {
    "X-Fleet-Node": routed?.nodeId ?? "none",
    "X-Fleet-Served-Model": headerValue(routed?.servedModel ?? "none"),
    "X-Fleet-Requested-Model": headerValue(requested),
    "X-Fleet-Fallback": String(routed?.fallback ?? false),
    "X-Fleet-Backend": routed?.backend ?? "none",
    "X-Fleet-Retries": String(retries),
  };
  if (routed?.score != null) headers["X-Fleet-Score"] = String(Math.round(routed.score));
  if (routed?.contextOverflow) {
    headers["X-Fleet-Context-Overflow"] = `estimated_tokens=${routed.contextOverflow.estimated}; context_length=${routed.contextOverflow.contextLength}`;
  }
  return headers;
}

/** Header-safe text for what a client sent (a model name): printable ASCII, the rest percent-encoded as UTF-8, and bounded. */
export function headerValue(text: string): string {
  const safe = text.replace(/[^\x20-\x7e]+/g, (run) => Array.from(utf8.encode(run), (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(""));
  return safe.length > MAX_HEADER_CHARS ? `${safe.slice(0, MAX_HEADER_CHARS)}...` : safe;
}

const utf8 = new TextEncoder();
const MAX_HEADER_CHARS = 256;

function ms(since: number): number {
  return round(performance.now() - since);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
