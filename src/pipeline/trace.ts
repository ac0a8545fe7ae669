// One trace row per request, whatever its kind: what was asked and by whom, what served it, how it
// ended. A row is built when the request comes in, filled as it goes, and recorded once, at its end.
import type { ClientKey } from "../core/client-key.ts";
import type { Answered } from "../router/routed.ts";
import type { RouteError } from "../errors.ts";
import { newRequestId, type Trace, type TraceStatus, type TraceWriter } from "../store/traces.ts";
import type { RouteMeta } from "./admit.ts";
import { MAX_NAME_CHARS, MAX_NAMES } from "../core/client-names.ts";

/** A node's error can be as long as it likes; the row keeps the start of it. */
const MAX_ERROR_CHARS = 2000;

/** The start of `text`, marked as cut when it was longer: a row never holds more than a client's name is allowed. */
function clip(text: string, max = MAX_NAME_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** What a trace reads of the request. */
export interface Traced {
  kind: string;
  /** The surface it came in on (the trace's original_format). */
  surface: string;
  /** The model to route. */
  model: string;
  /** The client's own id when a surface resolved it to `model`; else `model`. */
  requested?: string;
  resolution?: string;
  adjustments?: string[];
  /** Whether the answer streams; a node service's never does. */
  stream?: boolean;
}

/** The row of a request nothing has served yet. */
export function newTrace(req: Traced, meta: RouteMeta): Trace {
  return {
    request_id: newRequestId(),
    timestamp: Date.now() / 1000,
    model: clip(req.model),
    original_model: clip(req.requested ?? req.model),
    node_id: null,
    backend: null,
    kind: req.kind,
    original_format: req.surface,
    stream: req.stream ?? false,
    status: "failed",
    score: null,
    scores_breakdown: null,
    predicted_ms: null,
    prediction_breakdown: null,
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
}

/** A request's trace tags: the client's own (surfaces/herd-fields.ts: none passes for key:), and the key it came with. */
function traceTags(tags: string[], caller: ClientKey | null): string[] {
  const own = tags.slice(0, MAX_NAMES).map((tag) => clip(tag));
  return [...own, ...(caller ? [caller.tag] : [])];
}

/** The node that answered, and when it did (`started`: when the request came in, performance.now()). */
export function traceServed(trace: Trace, served: Answered, started: number): void {
  trace.model = served.servedModel;
  trace.node_id = served.nodeId;
  trace.backend = served.backend;
  trace.score = served.score;
  trace.scores_breakdown = served.breakdown;
  trace.predicted_ms = served.prediction?.ms ?? null;
  trace.prediction_breakdown = served.prediction?.breakdown ?? null;
  trace.retry_count = served.retries;
  trace.fallback_used = served.fallback;
  trace.excluded_nodes = served.excluded;
  trace.queue_wait_ms = round(served.slot.waitedMs);
  trace.time_to_first_token_ms = ms(started);
}

/** How the request ended: the row to record. */
export function traceEnd(trace: Trace, status: TraceStatus, started: number, error: string | null): Trace {
  trace.status = status;
  trace.latency_ms = ms(started);
  trace.error_message = error && clip(error, MAX_ERROR_CHARS);
  return trace;
}

/** A request nothing served: the error it got, the node whose answer it was (and its backend), and the nodes that failed before. */
export function traceRefused(trace: Trace, status: TraceStatus, started: number, error: RouteError): Trace {
  if (error.nodeId) trace.node_id = error.nodeId;
  if (error.ran) trace.backend = error.ran.backend;
  trace.retry_count = error.retries;
  trace.excluded_nodes = error.excluded;
  return traceEnd(trace, status, started, error.message);
}

/** Milliseconds since `since` (performance.now()), to a tenth. */
function ms(since: number): number {
  return round(performance.now() - since);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/** A request admission refused: a 429 (a client over its limits) is counted in /metrics but never stored, so throttled traffic cannot grow the store; any other refusal is a row. */
export function keepRefused(traces: Pick<TraceWriter, "record" | "tally">, row: Trace, status: number): void {
  if (status === 429) traces.tally(row);
  else traces.record(row);
}
