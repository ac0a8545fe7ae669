// A request a node's own service answers (an image, a transcript, native embeddings) goes through
// the stages a chat goes through: planned by its backend, admitted (the client's caps), attempted
// (a slot on its node:model queue, routing.maxRetries), cut by a stop past its grace, answered
// with the X-Fleet-* headers, traced. Its answer comes whole, so there is nothing to relay.
import { eitherSignal } from "../abort.ts";
import type { ServiceJob } from "../backends/node-service.ts";
import { RouteError } from "../errors.ts";
import type { Pipeline } from "./route.ts";
import type { TraceStatus } from "../store/traces.ts";
import { admit, leave, type RouteMeta } from "./admit.ts";
import { attempt, UNCAPPED } from "../router/attempt.ts";
import type { MediaRequest } from "../core/media-request.ts";
import { errorHeaders, fleetHeaders } from "../core/fleet-headers.ts";
import type { Answered } from "../router/routed.ts";
import { keepRefused, newTrace, traceEnd, traceRefused, traceServed } from "./trace.ts";

/** How the surface answers, in its own format: the value with the headers given, or an error. */
export interface ServiceReply<T> {
  answer(value: T, headers: Record<string, string>, served: Answered): Response;
  error(status: number, message: string, headers: Record<string, string>): Response;
}

/** Runs the job `plan` makes (a RouteError when nothing can run it) on the first node that answers. */
export async function runService<T>(rt: Pipeline, req: MediaRequest, meta: RouteMeta, plan: () => ServiceJob<T>, reply: ServiceReply<T>): Promise<Response> {
  const started = performance.now();
  // The model asked for, as the headers and the trace name it: for a transcription that named none, the one planned
  // for it (none while there is none).
  let requested = req.model ?? "none";
  const trace = newTrace({ kind: req.kind, surface: req.surface, model: requested }, meta);
  const refuse = (error: RouteError, status: TraceStatus) => {
    const row = traceRefused(trace, status, started, error);
    if (status === "rejected") keepRefused(rt.traces, row, error.status);
    else rt.traces.record(row);
    return reply.error(error.status, error.message, errorHeaders(requested, error));
  };
  const { config } = rt.live;
  let job: ServiceJob<T>;
  try {
    job = plan();
  } catch (e) {
    if (!(e instanceof RouteError)) throw e;
    return refuse(e, "failed");
  }
  if (req.model === null) requested = trace.model = trace.original_model = job.model;
  // Admitted once planned: a transcription that names no model is checked against the one picked for it.
  const refused = admit(rt.clients, config, meta, job.model, job.model, []);
  if (refused) return refuse(refused, "rejected");
  // A stop that runs out of grace ends the job too: nothing has been sent, so the client gets the 503.
  const running = eitherSignal(req.signal, rt.shutdown.signal);
  try {
    const served = await attempt(
      job.nodes.map((node) => ({ nodeId: node.id, model: job.model, node })),
      {
        queues: rt.queues,
        maxRetries: config.routing.maxRetries,
        waitMs: config.timeouts.firstByteMs,
        signal: running.signal,
        slots: UNCAPPED,
        async call({ node }, slot, excluded) {
          const { value, backend } = await job.call(node, running.signal);
          return { value, nodeId: node.id, servedModel: job.model, backend, fallback: false, score: null, breakdown: null, contextOverflow: null, retries: excluded.length, excluded, slot };
        },
        exhausted: ({ failures, excluded, retries }) => new RouteError(503, `no node that offers it could be reached: ${failures.join("; ")}`, retries, excluded),
      },
    );
    // Whatever goes wrong writing the answer, the node's slot is given back.
    try {
      traceServed(trace, served, started);
      rt.traces.record(traceEnd(trace, "completed", started, null));
      return reply.answer(served.value, fleetHeaders(requested, served, served.retries), served);
    } finally {
      served.slot.release("completed", performance.now() - started);
    }
  } catch (e) {
    const error = e instanceof RouteError ? e : new RouteError(502, (e as Error).message);
    return refuse(error, req.signal.aborted ? "client_disconnected" : "failed");
  } finally {
    running.release();
    leave(rt.clients, meta);
  }
}
