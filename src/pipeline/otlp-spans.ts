// A finished request's spans, read off its trace row: the row already holds what each stage did, so the spans are
// built after the request ended, off its path, and a request costs nothing more when OTLP export is off. Models and
// tokens carry OpenTelemetry's GenAI names (gen_ai.*), so a backend that knows them reads them; the rest is herd.*.
import type { Trace } from "../store/traces.ts";

export type SpanAttributes = Record<string, string | number | boolean>;

/** One span: `parent` is the index of its parent in the list (null for the request's own). Times in ms since the epoch. */
export interface PlannedSpan {
  name: string;
  /** OpenTelemetry's span kind: herd serving the client, calling a node, or its own work. */
  kind: "server" | "client" | "internal";
  parent: number | null;
  start: number;
  end: number;
  attributes: SpanAttributes;
  error: string | null;
}

/**
 * The request's span with its children: admit, route (the plan and its attempts, one per node tried, the failed ones
 * before the one that served), relay (first byte to the end). The row times only the whole and the first byte, so
 * a failed attempt is a point at the start and the served one runs from the start to the first byte.
 */
export function spansOf(row: Trace): PlannedSpan[] {
  const start = row.timestamp * 1000;
  const end = start + (row.latency_ms ?? 0);
  const firstByte = row.time_to_first_token_ms === null ? null : start + row.time_to_first_token_ms;
  const failed = row.status === "completed" ? null : (row.error_message ?? row.status);
  const spans: PlannedSpan[] = [
    {
      name: "herd.request",
      kind: "server",
      parent: null,
      start,
      end,
      attributes: defined({
        "herd.request_id": row.request_id,
        "herd.kind": row.kind,
        "herd.surface": row.original_format,
        "herd.stream": row.stream,
        "herd.status": row.status,
        "gen_ai.request.model": row.original_model,
        "gen_ai.response.model": row.node_id ? row.model : null,
        "herd.node": row.node_id,
        "herd.backend": row.backend,
        "herd.retries": row.retry_count,
        "herd.fallback": row.fallback_used,
        "herd.resolution": row.resolution,
        "gen_ai.usage.input_tokens": row.prompt_tokens,
        "gen_ai.usage.output_tokens": row.completion_tokens,
      }),
      error: failed,
    },
  ];
  const rejected = row.status === "rejected";
  spans.push({ name: "herd.admit", kind: "internal", parent: 0, start, end: rejected ? end : start, attributes: { "herd.admitted": !rejected }, error: rejected ? failed : null });
  if (rejected) return spans;
  const routeEnd = firstByte ?? end;
  spans.push({ name: "herd.route", kind: "internal", parent: 0, start, end: routeEnd, attributes: { "herd.model": row.model, "herd.nodes_excluded": row.excluded_nodes.length }, error: row.node_id ? null : failed });
  const route = spans.length - 1;
  row.excluded_nodes.forEach((node, retry) => {
    spans.push({ name: "herd.attempt", kind: "client", parent: route, start, end: start, attributes: { "herd.node": node, "herd.retry": retry, "herd.outcome": "failed" }, error: "failed before its first byte" });
  });
  if (!row.node_id || firstByte === null) return spans;
  spans.push({
    name: "herd.attempt",
    kind: "client",
    parent: route,
    start,
    end: firstByte,
    attributes: defined({ "herd.node": row.node_id, "herd.model": row.model, "herd.retry": row.retry_count, "herd.outcome": "served", "herd.queue_wait_ms": row.queue_wait_ms, "herd.score": row.score }),
    error: null,
  });
  spans.push({
    name: "herd.relay",
    kind: "internal",
    parent: 0,
    start: firstByte,
    end,
    attributes: defined({ "herd.first_byte_ms": row.time_to_first_token_ms, "gen_ai.usage.output_tokens": row.completion_tokens }),
    error: failed,
  });
  return spans;
}

/** The attributes that have a value: OTLP has no null. */
function defined(attributes: Record<string, string | number | boolean | null>): SpanAttributes {
  return Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== null)) as SpanAttributes;
}
