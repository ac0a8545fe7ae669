// One request end to end: the stages that need the model it will run (resolution, context
// fitting, thinking), then dispatch it, relay the node's lines to the client in
// the surface's wire format, and leave a trace. Headers go out only once a
// node has answered, so X-Fleet-Node always names the node that served.
import type { LiveConfig } from "../config/live.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import type { Encoder } from "../core/encoder.ts";
import { type Chunk, endOf, errorOf, type Usage, usageOf } from "../core/events.ts";
import type { InferenceRequest } from "../core/request.ts";
import { RouteError } from "../errors.ts";
import { type Clock, heldToClock } from "../fleet/claimed-times.ts";
import type { ModelFacts } from "../fleet/model-facts.ts";
import type { NodeOrdering } from "../fleet/ordering.ts";
import type { Pulls } from "../fleet/pulls.ts";
import type { SessionAffinity } from "../fleet/affinity.ts";
import type { Queues } from "../fleet/queues.ts";
import { diskBytes, type Registry } from "../fleet/registry.ts";
import type { PromptCounts } from "../fleet/prompt-counts.ts";
import type { ExploreTurns } from "../fleet/explore-turns.ts";
import type { Speeds } from "../fleet/speeds.ts";
import { budgetHeaders } from "../router/body-rules.ts";
import type { ClientGate } from "../router/client-gate.ts";
import { dispatch } from "../router/dispatch.ts";
import { gather, relay } from "../router/relay.ts";
import type { Routed } from "../router/routed.ts";
import type { Summarise } from "../router/compaction.ts";
import type { ClientKey } from "../core/client-key.ts";
import type { Toggles } from "../router/toggles.ts";
import type { RepairStats } from "../fleet/repair-stats.ts";
import { ToolCallRepair } from "../router/tool-repair.ts";
import type { Trace, TraceStatus, TraceWriter } from "../store/traces.ts";
import { admit, leave, type RouteMeta } from "./admit.ts";
import { fitContext } from "./context-fit.ts";
import { resolveAgentModel } from "./resolve.ts";
import { decideThink } from "./thinking.ts";
import { deadline } from "./deadline.ts";
import { answerHeaders, errorHeaders, fleetHeaders } from "../core/fleet-headers.ts";
import { keepRefused, newTrace, traceEnd, traceRefused, traceServed } from "./trace.ts";
import type { AfterAnswer } from "./after-answer.ts";

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
  exploreTurns: Pick<ExploreTurns, "due">;
  /** What each answer's prompt count teaches of its model's tokenizer, and the num_ctx sized from it. */
  promptCounts: Pick<PromptCounts, "observe" | "expected">;
  /** What a node says of a model: its trained context (context fitting) and whether it thinks. */
  modelFacts: Pick<ModelFacts, "canThink" | "contextLength" | "answeredOf">;
  /** Where each session's last turn ran: routing's guess of which node still holds its prompt cached. */
  affinity: Pick<SessionAffinity, "holder" | "served">;
  /** A summary of a conversation's oldest turns, written on the fleet (pipeline/summarise.ts), for context fitting. */
  summarise: Summarise;
  /** Aborted when a stop's grace period runs out: what is still waiting or streaming ends with an error. */
  shutdown: AbortController;
  /** Where each answer's bookkeeping waits until the answer is out. */
  afterAnswer: Pick<AfterAnswer, "later">;
}

export async function route(rt: Pipeline, req: InferenceRequest, encoder: Encoder, meta: RouteMeta): Promise<Response> {
  // Before admission, which checks the model that will serve; a request refused here leaves no trace, as a 400 leaves none.
  const unresolved = req.resolve ? resolveAgentModel(rt.registry, rt.live.config, req, meta.caller) : null;
  if (unresolved) return encoder.error(unresolved.status, unresolved.message, errorHeaders(req.requested ?? req.model, unresolved));
  const started = performance.now();
  const requested = req.requested ?? req.model;
  const trace = newTrace(req, meta);
  const refused = admit(rt.clients, rt.live.config, meta, requested, req.model, req.fallbackModels);
  if (refused) {
    keepRefused(rt.traces, traceEnd(trace, "rejected", started, refused.message), refused.status);
    return encoder.error(refused.status, refused.message, errorHeaders(requested, refused));
  }
  // After admission: fitting may ask a model of the fleet for a summary, which a key over its rate, or one asking for a
  // model it may not use, must not get.
  const unfit = req.fitContext || req.thinkAsk ? await fitStages(rt, req, meta.caller) : null;
  if (unfit) {
    leave(rt.clients, meta);
    keepRefused(rt.traces, traceEnd(trace, "rejected", started, unfit.message), unfit.status);
    return encoder.error(unfit.status, unfit.message, errorHeaders(requested, unfit));
  }
  trace.adjustments = req.adjustments ?? [];
  // The request's deadline, a stop that runs out of grace and the client leaving end the wait for a node (with their
  // RouteError) and a whole answer's gathering; the first two end the relay too.
  const limit = deadline(rt.live.config, req.kind, rt.shutdown.signal, req.signal);
  let routed: Routed;
  try {
    routed = await dispatch({ registry: rt.registry, queues: rt.queues, ordering: rt.ordering, pulls: rt.pulls, speeds: rt.speeds, exploreTurns: rt.exploreTurns, promptCounts: rt.promptCounts, affinity: rt.affinity, modelFacts: rt.modelFacts, config: rt.toggles.apply(rt.live.config), grant: meta.caller }, req, limit.signal);
  } catch (e) {
    limit.release();
    leave(rt.clients, meta);
    const error = e instanceof RouteError ? e : new RouteError(502, (e as Error).message);
    rt.traces.record(traceRefused(trace, req.signal.aborted ? "client_disconnected" : "failed", started, error));
    return encoder.error(error.status, error.message, errorHeaders(requested, error));
  }
  // A stream follows the client by its cancel from here; a whole answer still waits for its gathering, which a client that left ends.
  if (req.stream) limit.relaying();
  // herd's own clock of the answer, from its slot (the call went out then): its first byte is here, its last at finish.
  const firstByteMs = performance.now() - routed.slot.takenAt;
  const whole = req.kind === "embed" || endOf(routed.call.first) !== undefined || (routed.call.arrived?.some((c) => endOf(c) !== undefined) ?? false);
  // The node's slot now holds this prompt (however the answer ends: it was evaluated), unless the node refused it.
  if (routed.call.status < 400) rt.affinity.served(req.session?.key, routed.nodeId, routed.servedModel);
  let finished = false;
  const finish: Finish = (status, done, error) => {
    if (finished) return;
    finished = true;
    limit.release();
    const row = traceEnd(trace, status, started, error);
    routed.slot.release(status === "completed" ? "completed" : "failed", row.latency_ms!);
    leave(rt.clients, meta);
    const clock: Clock = { firstByteMs, lastByteMs: performance.now() - routed.slot.takenAt, whole };
    rt.afterAnswer.later(() => account(rt, req, routed, row, status, done, clock));
  };
  // Whatever goes wrong from here, the node's slot and the client's place are given back.
  try {
    traceServed(trace, routed, started);
    if (routed.adjustments.length) trace.adjustments = [...trace.adjustments, ...routed.adjustments];
    return await answer(rt, req, encoder, routed, finish, limit.signal);
  } catch (e) {
    routed.call.cancel();
    const error = new RouteError(500, `herd could not build the answer: ${(e as Error).message}`);
    finish("failed", null, error.message);
    return encoder.error(error.status, error.message, errorHeaders(requested, error));
  }
}

/** What the answer teaches: its trace row, the node's speed (its claims held to herd's `clock`) and parallel slots, the model's token counts. */
function account(rt: Pipeline, req: InferenceRequest, routed: Routed, row: Trace, status: TraceStatus, done: Chunk | null, clock: Clock): void {
  const usage = done && usageOf(done);
  row.prompt_tokens = usage?.promptTokens ?? null;
  row.completion_tokens = usage?.completionTokens ?? null;
  rt.traces.record(row);
  if (!usage) return;
  // Not from a turn herd expects cached: some Ollama versions count only the part they evaluated, an under-count.
  if (req.kind !== "embed" && routed.cachedPromptTokens === 0) rt.promptCounts.observe(routed.servedModel, req.promptTokens, usage.promptTokens, routed.contextTokens);
  rt.speeds.observe(routed.nodeId, routed.servedModel, learnable(heldToClock(usage, clock), routed), diskBytes(rt.registry.get(routed.nodeId), routed.servedModel));
  const ranMs = status === "completed" && routed.backend === "ollama" ? ranMsOf(usage) : null;
  // A claim of more time than herd waited would read as parallel slots the node does not have.
  const wallMs = clock.lastByteMs;
  if (ranMs !== null) rt.registry.learnedSlots.observe(routed.nodeId, { othersInFlight: routed.slot.othersInFlight, wallMs, ranMs: Math.min(ranMs, wallMs) });
}

/** The stages that need the model the request will run on, once it is resolved and admitted (only agents' surfaces ask for them): context fitting, thinking. */
async function fitStages(rt: Pipeline, req: InferenceRequest, caller: ClientKey | null): Promise<RouteError | null> {
  // A summary is a model's work done for the key: it takes from the key's per-minute budget (its place in flight is the request's).
  const summarise: Summarise = (ask, signal) => {
    const over = caller?.take();
    return over ? Promise.reject(new Error(over.message)) : rt.summarise(ask, signal);
  };
  const unfit = await fitContext(rt.modelFacts, rt.live.config, summarise, req);
  if (!unfit) await decideThink(rt.modelFacts, req);
  return unfit;
}

type Finish = (status: TraceStatus, done: Chunk | null, error: string | null) => void;

/** The node's answer, to the client: an error the node gave, one whole answer, or the stream relayed. */
async function answer(rt: Pipeline, req: InferenceRequest, encoder: Encoder, routed: Routed, finish: Finish, limit: AbortSignal): Promise<Response> {
  const requested = req.requested ?? req.model;
  // The node refused the request itself (a 4xx, e.g. a model that cannot embed): the client gets it in its own format.
  if (routed.call.status >= 400) {
    routed.call.cancel();
    const message = errorOf(routed.call.first) ?? `node ${routed.nodeId} answered HTTP ${routed.call.status}`;
    finish("failed", null, message);
    return encoder.error(routed.call.status, message, fleetHeaders(requested, routed, routed.retries));
  }
  // A client that asked for one answer gets one answer or one error, even from a node that streams anyway.
  if (!req.stream) {
    const gathering = gather(routed, req.kind, limit, nodeAnswerCap(rt.live.config));
    const failure = gathering instanceof Promise ? await gathering : gathering;
    if (failure) {
      finish(req.signal.aborted ? "client_disconnected" : "failed", null, failure.message);
      return encoder.error(failure.status, failure.message, fleetHeaders(requested, routed, routed.retries));
    }
  }
  // A non-streaming answer is whole in its first line, so its budget diagnostics can go in the headers.
  const first = routed.call.first;
  const budget = routed.thinkingBudget && !req.stream && endOf(first)?.type === "done" ? budgetHeaders(routed.thinkingBudget, first) : {};
  const tools = req.kind === "chat" ? req.tools : [];
  const repair = tools.length ? new ToolCallRepair(tools, rt.toolRepairs.counter(routed.servedModel)) : null;
  const clientReadMs = rt.live.config.timeouts.clientReadMs;
  return new Response(relay(routed, req.kind, encoder, repair, finish, limit, clientReadMs), {
    status: routed.call.status,
    headers: answerHeaders(encoder.contentType, requested, routed, routed.retries, budget),
  });
}

/**
 * What the answer tells of the node's speed. After a KV-cache hit, Ollama's prompt_eval_count is still the whole
 * prompt while prompt_eval_duration covers only the part not cached, so their ratio would overstate the node's
 * prefill rate, and every later estimate of a cold prompt there. Subtracting the cached part is not sound: it is
 * a guess (the slot may have been taken after all, and the estimate counts tokens roughly), and a wrong guess
 * would skew the rate the other way. So a request affinity took to be cached teaches no prefill rate; its decode
 * and load still count.
 */
/** The time an Ollama answer says the node spent on it (load, prompt, decode), in ms; null when it does not say. */
function ranMsOf(u: Usage): number | null {
  return u.evalNs === undefined ? null : ((u.loadNs ?? 0) + (u.promptNs ?? 0) + u.evalNs) / 1e6;
}

function learnable(usage: Usage, routed: Routed): Usage {
  return routed.cachedPromptTokens > 0 ? { ...usage, promptTokens: undefined, promptNs: undefined } : usage;
}

