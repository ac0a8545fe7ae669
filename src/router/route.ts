// One request end to end: dispatch it, relay the node's lines to the client in
// the surface's wire format, and leave a trace. Headers go out only once a
// node has answered, so X-Fleet-Node always names the node that served.
import type { OllamaLine } from "../backends/ollama.ts";
import type { Runtime } from "../runtime.ts";
import type { Trace, TraceStatus } from "../store/traces.ts";
import { budgetHeaders } from "./body-rules.ts";
import { type RouteRequest, RouteError, type Routed, dispatch } from "./dispatch.ts";
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
}

export async function route(rt: Runtime, req: RouteRequest, encoder: Encoder, meta: RouteMeta): Promise<Response> {
  const started = performance.now();
  const requested = req.requested ?? req.model;
  const trace: Trace = {
    request_id: crypto.randomUUID(),
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
    tags: meta.tags,
    resolution: req.resolution ?? null,
    adjustments: req.adjustments ?? [],
  };
  const client = meta.clientIp ?? "unknown";
  const { clientMaxInFlight, clientRetryAfterSeconds } = rt.live.config.routing;
  if (!rt.clients.enter(client, clientMaxInFlight)) {
    const message = `client ${client} already has ${clientMaxInFlight} requests in flight (routing.clientMaxInFlight); retry after ${clientRetryAfterSeconds} s`;
    rt.traces.record({ ...trace, status: "rejected", error_message: message, latency_ms: ms(started) });
    return encoder.error(429, message, { ...fleetHeaders(requested, null, 0), "Retry-After": String(clientRetryAfterSeconds) });
  }
  let left = false;
  const leave = () => {
    if (!left) rt.clients.leave(client);
    left = true;
  };
  let routed: Routed;
  try {
    routed = await dispatch({ registry: rt.registry, queues: rt.queues, ordering: rt.ordering, pulls: rt.pulls, config: rt.toggles.apply(rt.live.config) }, req);
  } catch (e) {
    leave();
    const error = e instanceof RouteError ? e : new RouteError(502, (e as Error).message);
    rt.traces.record({ ...trace, status: req.signal.aborted ? "client_disconnected" : "failed", error_message: error.message, retry_count: error.retries, excluded_nodes: error.excluded, latency_ms: ms(started) });
    const headers = fleetHeaders(requested, null, error.retries);
    if (error.retryAfterS) headers["Retry-After"] = String(error.retryAfterS);
    return encoder.error(error.status, error.message, headers);
  }
  Object.assign(trace, {
    model: routed.servedModel,
    node_id: routed.nodeId,
    backend: "ollama",
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
  return new Response(relay(routed, req.kind, encoder, repair, finish), {
    status: routed.call.status,
    headers: { "content-type": encoder.contentType, ...fleetHeaders(requested, routed, routed.retries), ...budget },
  });
}

export function fleetHeaders(requested: string, routed: Routed | null, retries: number): Record<string, string> {
  const headers: Record<string, string> = {
    "X-Fleet-Node": routed?.nodeId ?? "none",
    "X-Fleet-Served-Model": routed?.servedModel ?? "none",
    "X-Fleet-Requested-Model": requested,
    "X-Fleet-Fallback": String(routed?.fallback ?? false),
    "X-Fleet-Backend": routed ? "ollama" : "none",
    "X-Fleet-Retries": String(retries),
  };
  if (routed) headers["X-Fleet-Score"] = String(Math.round(routed.score));
  if (routed?.contextOverflow) {
    headers["X-Fleet-Context-Overflow"] = `estimated_tokens=${routed.contextOverflow.estimated}; context_length=${routed.contextOverflow.contextLength}`;
  }
  return headers;
}

function ms(since: number): number {
  return round(performance.now() - since);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
