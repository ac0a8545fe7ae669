// One request end to end: dispatch it, relay the node's lines to the client in
// the surface's wire format, and leave a trace. Headers go out only once a
// node has answered, so X-Fleet-Node always names the node that served.
import { eitherSignal } from "../abort.ts";
import type { LiveConfig } from "../config/live.ts";
import type { Encoder } from "../core/encoder.ts";
import { type Chunk, endOf, errorOf, type Usage, usageOf } from "../core/events.ts";
import type { InferenceRequest } from "../core/request.ts";
import { RouteError } from "../errors.ts";
import type { NodeOrdering } from "../fleet/ordering.ts";
import type { Pulls } from "../fleet/pulls.ts";
import type { Queues } from "../fleet/queues.ts";
import { diskBytes, type Registry } from "../fleet/registry.ts";
import type { Speeds } from "../fleet/speeds.ts";
import { budgetHeaders } from "../router/body-rules.ts";
import type { ClientGate } from "../router/client-gate.ts";
import { dispatch } from "../router/dispatch.ts";
import { relay } from "../router/relay.ts";
import type { Routed } from "../router/routed.ts";
import type { Toggles } from "../router/toggles.ts";
import type { RepairStats } from "../fleet/repair-stats.ts";
import { ToolCallRepair } from "../router/tool-repair.ts";
import type { Trace, TraceStatus, TraceWriter } from "../store/traces.ts";
import { admit, leave, type RouteMeta } from "./admit.ts";
import { errorHeaders, fleetHeaders } from "../core/fleet-headers.ts";
import { keepRefused, newTrace, traceEnd, traceRefused, traceServed } from "./trace.ts";

/** What the request pipeline reads, for a chat (route), a node service's answer (runService) and native embeddings alike. */
export interface Pipeline {
  live: LiveConfig;
  registry: Registry;
  queues: Queues;
  ordering: NodeOrdering;
  pulls: Pulls;
  toggles: Toggles;
  clients: ClientGate;
  traces: Pick<TraceWriter, "record" | "tally">;
  toolRepairs: RepairStats;
  /** What each answer teaches of its node's speed, and what routing predicts from it. */
  speeds: Pick<Speeds, "observe" | "predict" | "typicalReply">;
  /** Aborted when a stop's grace period runs out: what is still waiting or streaming ends with an error. */
  shutdown: AbortController;
}

export async function route(rt: Pipeline, req: InferenceRequest, encoder: Encoder, meta: RouteMeta): Promise<Response> {
  const started = performance.now();
  const requested = req.requested ?? req.model;
  const trace = newTrace(req, meta);
  const refused = admit(rt.clients, rt.live.config, meta, requested, req.model, req.fallbackModels);
  if (refused) {
    keepRefused(rt.traces, traceEnd(trace, "rejected", started, refused.message), refused.status);
    return encoder.error(refused.status, refused.message, errorHeaders(requested, refused));
  }
  let routed: Routed;
  // A stop that runs out of grace ends the wait for a node too (with its RouteError, a 503).
  const dispatching = eitherSignal(req.signal, rt.shutdown.signal);
  try {
    routed = await dispatch({ registry: rt.registry, queues: rt.queues, ordering: rt.ordering, pulls: rt.pulls, speeds: rt.speeds, config: rt.toggles.apply(rt.live.config), grant: meta.caller }, req, dispatching.signal);
  } catch (e) {
    leave(rt.clients, meta);
    const error = e instanceof RouteError ? e : new RouteError(502, (e as Error).message);
    rt.traces.record(traceRefused(trace, req.signal.aborted ? "client_disconnected" : "failed", started, error));
    return encoder.error(error.status, error.message, errorHeaders(requested, error));
  } finally {
    // From here the relay follows the client (its stream's cancel) and the stop (its own listener).
    dispatching.release();
  }
  traceServed(trace, routed, started);
  if (routed.adjustments.length) trace.adjustments = [...trace.adjustments, ...routed.adjustments];
  // The node refused the request itself (a 4xx, e.g. a model that cannot embed): the client gets it in its own format.
  if (routed.call.status >= 400) {
    routed.call.cancel();
    const message = errorOf(routed.call.first) ?? `node ${routed.nodeId} answered HTTP ${routed.call.status}`;
    routed.slot.release("failed");
    leave(rt.clients, meta);
    rt.traces.record(traceEnd(trace, "failed", started, message));
    return encoder.error(routed.call.status, message, fleetHeaders(requested, routed, routed.retries));
  }
  const finish = (status: TraceStatus, done: Chunk | null, error: string | null) => {
    const row = traceEnd(trace, status, started, error);
    routed.slot.release(status === "completed" ? "completed" : "failed", row.latency_ms!);
    leave(rt.clients, meta);
    const usage = done && usageOf(done);
    row.prompt_tokens = usage?.promptTokens ?? null;
    row.completion_tokens = usage?.completionTokens ?? null;
    rt.traces.record(row);
    if (usage) rt.speeds.observe(routed.nodeId, routed.servedModel, timed(usage, row, req.stream ?? false), diskBytes(rt.registry.get(routed.nodeId), routed.servedModel));
  };
  // A non-streaming answer is whole in its first line, so its budget diagnostics can go in the headers.
  const first = routed.call.first;
  const budget = routed.thinkingBudget && !req.stream && endOf(first)?.type === "done" ? budgetHeaders(routed.thinkingBudget, first) : {};
  const tools = req.kind === "chat" ? req.tools : [];
  const repair = tools.length ? new ToolCallRepair(tools, rt.toolRepairs.counter(routed.servedModel)) : null;
  return new Response(relay(routed, req.kind, encoder, repair, finish, rt.shutdown.signal), {
    status: routed.call.status,
    headers: { "content-type": encoder.contentType, ...fleetHeaders(requested, routed, routed.retries), ...budget },
  });
}

/**
 * The usage with a decode time: an MLX server gives counts but no durations, so a stream's decode time is the wall
 * time from its first chunk to its last (queueing and prefill are before the first). A whole answer's first byte is
 * its end: it tells no decode time.
 */
function timed(usage: Usage, row: Trace, stream: boolean): Usage {
  if (usage.evalNs !== undefined || !stream || row.latency_ms === null || row.time_to_first_token_ms === null) return usage;
  return { ...usage, evalNs: (row.latency_ms - row.time_to_first_token_ms) * 1e6 };
}
