// The router core for one request: resolve the model, score the nodes that have
// it (then those of each fallback model), and hand them in that order to the
// attempt loop, with the call to a node's Ollama. It returns once a node has
// answered, so the headers it produces name the node that really serves.
import { lineLimits } from "../backends/lines.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import { responseJson } from "../core/capped-body.ts";
import { callOllama, pullModel } from "../backends/ollama.ts";
import { ollamaBody } from "../backends/ollama-render.ts";
import { type InferenceRequest, replyCapOf } from "../core/request.ts";
import { RouteError } from "../errors.ts";
import { log } from "../log.ts";
import { mlxModelOf } from "../fleet/catalog.ts";
import { modelKey, normalizeModelName } from "../fleet/model-name.ts";
import { markPulled, notPullable, placePull, pullTargets } from "../fleet/pulls.ts";
import { ollamaDown, START_OLLAMA } from "../fleet/ollama-down.ts";
import type { Queues } from "../fleet/queues.ts";
import { markEvicted, markRunnerContext, type NodeRecord, type Registry } from "../fleet/registry.ts";
import { type Eligibility, type Eligible, eligibleNodes, type NodeView, type Scored, scoreEligible } from "../fleet/scorer.ts";
import { attempt, type Tried } from "./attempt.ts";
import { resolveAlias } from "./aliases.ts";
import { contextAt, optionsFor } from "./body-rules.ts";
import { neededContext, SMALLEST_DEFAULT_CONTEXT } from "./context-size.ts";
import { byFinishTime, type Timed } from "./finish-order.ts";
import { nodeView } from "./node-view.ts";
import { dispatchMlx } from "./mlx-dispatch.ts";
import type { Routed, RouterDeps } from "./routed.ts";
import { vramSubstitute } from "./vram-fallback.ts";

/**
 * Routes the request; a model no node has is pulled first when features.autoPull is on and the caller may pull
 * (the admin, open mode, or a key with the "pull" permission: what is on a node's disk is not every key's to change).
 * MLX models go to MLX servers.
 */
/** `signal`: the client's, or the stop's once its grace runs out. */
export async function dispatch(deps: RouterDeps, req: InferenceRequest, signal: AbortSignal): Promise<Routed> {
  const model = resolveAlias(req.model, deps.config.modelMap);
  const mlxModel = mlxModelOf(deps.registry, model);
  if (mlxModel) return dispatchMlx(deps, req, mlxModel, signal);
  try {
    return await onOllama(deps, req, signal);
  } catch (e) {
    if (!(e instanceof RouteError) || e.status !== 404 || !deps.config.features.autoPull || !(deps.grant?.mayPull ?? true)) throw e;
    const failed = await autoPull(deps, normalizeModelName(model), signal);
    if (failed) throw new RouteError(404, `${e.message}; auto-pull: ${failed}`);
    return onOllama(deps, req, signal);
  }
}

/** Pulls `model` onto the best node; returns why it could not, or null once the model is there; a 503 when no node has the memory to run it. */
async function autoPull(deps: RouterDeps, model: string, signal: AbortSignal): Promise<string | null> {
  const refusal = notPullable(model);
  if (refusal) return refusal;
  const place = placePull(deps.registry, model, pullTargets(deps.registry));
  if (!place) return "no online node can take a pull";
  // The same refusal as POST /api/pull's: a model no node could run is not worth the disk or the wait.
  if ("refused" in place) throw new RouteError(503, place.refused);
  const { node } = place;
  const busy = deps.pulls.begin(model, node.id);
  if (busy) return `already being pulled onto ${busy}; retry when it is done`;
  try {
    const res = await pullModel(deps.registry.ollamaUrl(node)!, model, false, AbortSignal.any([signal, AbortSignal.timeout(deps.config.timeouts.autoPullMs)]));
    const body = (await responseJson(res, nodeAnswerCap(deps.config)).catch((e) => ({ error: (e as Error).message }))) as { error?: string };
    if (!res.ok || body.error) return `${node.id} could not pull it (${body.error ?? `HTTP ${res.status}`})`;
    markPulled(node, model);
    return null;
  } catch (e) {
    return `${node.id} did not finish within ${deps.config.timeouts.autoPullMs} ms (${(e as Error).message})`;
  } finally {
    deps.pulls.end(model);
  }
}

/** The request on the nodes' Ollama: the model asked for, then its fallbacks, each on its nodes in the routing order. */
async function onOllama(deps: RouterDeps, req: InferenceRequest, signal: AbortSignal): Promise<Routed> {
  const { config, registry, queues } = deps;
  const nodes = registry.all().map((n) => nodeView(registry, n));
  const models = [req.model, ...(req.strict ? [] : req.fallbackModels)].map((m) => normalizeModelName(resolveAlias(m, config.modelMap)));
  const requested = models[0]!;
  // Each model's eligibility is worked out once: the VRAM-fallback check, the ranking and the 503's reasons share it.
  const verdicts = new Map<string, Eligibility>();
  const verdict = (model: string): Eligibility => {
    if (!verdicts.has(model)) verdicts.set(model, eligibleNodes(nodes, { model, promptTokens: req.promptTokens }));
    return verdicts.get(model)!;
  };
  const eligible = (model: string): Eligible[] => verdict(model).eligible;
  const cached = new Map<string, (nodeId: string) => number>();
  const cachedOn = (model: string) => {
    if (!cached.has(model)) cached.set(model, cachedPrompt(deps, nodes, req, model));
    return cached.get(model)!;
  };
  if (config.features.vramFallback && !req.strict) {
    const standIn = vramSubstitute(requested, nodes, req.needs, (m) => deps.grant?.mayServe(m) ?? true);
    if (standIn) models.unshift(standIn);
  }
  const trained = await trainedContexts(deps, req, models);
  const optionsOf = optionsFor(req, deps.promptCounts, config.features.contextProtection);
  const sendOptions = (e: Eligible) => optionsOf(e.model, contextAt(e, trained.get(e.model) ?? null));
  // Ranked again (inOrder), a request that has waited explores nothing: it goes where it finishes soonest, and its first
  // ranking alone took its turn to explore.
  const rank = (model: string, again = false): Ranked[] => {
    if (config.routing.strategy !== "finish-time") return scoreEligible(nodes, eligible(model), (id) => queues.view(id, model), config.scoring);
    return byFinishTime(again ? { ...deps, exploreTurns: NO_EXPLORING } : deps, eligible(model), req, config.routing.sessionAffinity ? cachedOn(model) : undefined, sendOptions, trained.get(model) ?? null);
  };
  return attempt(inOrder(deps, models, rank), {
    queues,
    maxRetries: config.routing.maxRetries,
    waitMs: config.timeouts.firstByteMs,
    signal,
    slots: registry,
    promptTokens: req.promptTokens,
    async call(candidate, slot, excluded, leftMs) {
      const { model, loadedContext } = candidate;
      // A load herd sent there evicts the model: the request waits for it here, as its estimate has it (fleet/node-loads.ts).
      const evicting = queues.loads.evicted(candidate.nodeId, model, leftMs, signal);
      if (evicting) leftMs -= await evicting;
      const { options, thinkingBudget, notes, overflow, warning } = sendOptions(candidate);
      if (warning) log.warn(warning);
      const node = registry.get(candidate.nodeId)!;
      if (typeof options.num_ctx === "number") markRunnerContext(node, model, options.num_ctx);
      if ("evicts" in candidate) evict(queues, node, candidate.evicts);
      const loaded = "prediction" in candidate ? sendLoad(queues, candidate) : NO_LOAD;
      const call = await callOllama(registry.ollamaUrl(node)!, req.path, JSON.stringify(ollamaBody(req, model, options)), {
        firstByteMs: Math.max(1, Math.ceil(leftMs)), // up: a first attempt names the whole budget, not a millisecond less
        lines: lineLimits(config),
        whole: nodeAnswerCap(config),
        signal,
      }).finally(loaded);
      return {
        call,
        backend: "ollama",
        nodeId: candidate.nodeId,
        servedModel: model,
        score: candidate.score,
        breakdown: candidate.breakdown,
        prediction: "prediction" in candidate ? candidate.prediction : null,
        retries: excluded.length,
        fallback: model !== requested,
        excluded,
        slot,
        contextOverflow: overflow,
        thinkingBudget,
        adjustments: notes,
        // Known whether affinity steered the choice or not: what the node learns of its prefill rate depends on it.
        cachedPromptTokens: cachedOn(model)(candidate.nodeId),
        contextTokens: typeof options.num_ctx === "number" ? options.num_ctx : (loadedContext ?? null),
      };
    },
    exhausted: (tried) => unroutable(registry, nodes, models, tried, (model, nodeId) => verdict(model).eliminated.find((e) => e.nodeId === nodeId)?.reason),
  });
}

/**
 * The trained context of each model the request may run on (/api/show, asked once per model and remembered), where it
 * can change what the request is sent: a request that fits the smallest context any node picks, and asks no larger
 * one itself, is not held for it.
 */
async function trainedContexts({ modelFacts }: RouterDeps, req: InferenceRequest, models: string[]): Promise<Map<string, number | null>> {
  const asked = typeof req.options.num_ctx === "number" ? req.options.num_ctx : 0;
  if (req.kind === "embed" || Math.max(asked, neededContext(req.promptTokens, replyCapOf(req))) <= SMALLEST_DEFAULT_CONTEXT) return new Map();
  return new Map(await Promise.all(models.map(async (m) => [m, await modelFacts.contextLength(m)] as const)));
}

/**
 * Per node, the prompt tokens it likely still holds cached for this request of `model`: the session's last turn,
 * on the node that served it, while that node keeps the model and the slot (fleet/affinity.ts); 0 elsewhere.
 */
function cachedPrompt({ affinity, registry, queues }: RouterDeps, nodes: NodeView[], req: InferenceRequest, model: string): (nodeId: string) => number {
  const session = req.session;
  if (!session || session.cachedTokens <= 0) return () => 0;
  // Loaded as the last report says, or running a request of it now (a report may lag behind a load).
  const resident = (id: string) => Boolean(nodes.find((n) => n.id === id)?.loadedByKey.has(modelKey(model))) || queues.view(id, model).inFlight > 0;
  const holder = affinity.holder(session.key, model, (id) => registry.parallel(id), resident);
  const tokens = Math.min(session.cachedTokens, req.promptTokens);
  return (nodeId) => (nodeId === holder ? tokens : 0);
}

/**
 * herd sends a load that it expects to make the node evict these models: they are marked gone now, and the requests
 * waiting at herd for one of them there are routed again, not sent after it to load it back (Ollama queues that load
 * behind this one, and it evicts another in turn).
 */
function evict(queues: Queues, node: NodeRecord, models: readonly string[]): void {
  markEvicted(node, models);
  for (const model of models) {
    const moved = queues.move(node.id, normalizeModelName(model), Infinity, "as a load there evicts its model", true);
    if (moved) log.info(`moved ${moved} waiting request(s) for ${model} off ${node.id}: a load there evicts it`);
  }
}

/** A request that loads (or reloads) its model joins the node's loads (fleet/node-loads.ts) until its first byte. */
function sendLoad(queues: Queues, { nodeId, model, prediction: { breakdown: b }, evicts }: Timed): () => void {
  const loadMs = b.load_ms + b.reload_ms;
  return loadMs > 0 ? queues.loads.begin(nodeId, { model, waitMs: b.memory_wait_ms ?? 0, loadMs: b.evict_ms + loadMs, evicts }) : NO_LOAD;
}

const NO_LOAD = () => {};
const NO_EXPLORING = { due: () => false };

/**
 * Each model's nodes in the routing order, lazily: a fallback model is ranked (and takes its round-robin turn) only once
 * the ones before it failed. Under finish-time the nodes not tried yet are ranked again for each next try: a request
 * moved off its node or failed there has waited, and the estimate of the others has changed meanwhile. A node the
 * request was moved off as a load there evicts its model (attempt.ts: the node it is told) is among them again: it may
 * still be the soonest, its model's load there priced now.
 */
function* inOrder({ ordering, queues, config }: RouterDeps, models: string[], rank: (model: string, again?: boolean) => Ranked[]): Generator<Ranked, void, string | undefined> {
  for (const model of models) {
    if (config.routing.strategy !== "finish-time") {
      yield* ordering.order(config.routing.strategy, model, rank(model), (id) => queues.nodeLoad(id).inFlight);
      continue;
    }
    const tried = new Set<string>();
    for (let next: Ranked | undefined = rank(model)[0]; next; next = rank(model, true).find((c) => !tried.has(c.nodeId))) {
      tried.add(next.nodeId);
      const back = yield next;
      if (back !== undefined) tried.delete(back);
    }
  }
}

/** A candidate as the scorer ranked it, or by its finish time. */
type Ranked = Scored | Timed;

/**
 * 404 when no node has any of the models, 503 when some node has one but none could serve it now: each holder with
 * why routing excluded it (offline, draining, too big for its memory), if it did.
 */
function unroutable(registry: Registry, nodes: NodeView[], models: string[], { failures, excluded, retries }: Tried, why: (model: string, nodeId: string) => string | undefined): RouteError {
  const holders = models.flatMap((model) =>
    nodes.filter((n) => n.availableByKey.has(modelKey(model)) || n.loadedByKey.has(modelKey(model))).map((n) => `${model} on ${n.id} (${why(model, n.id) ?? "online"})`),
  );
  const asked = models.map((m) => `"${m}"`).join(", ");
  if (!holders.length) {
    const known = [...new Set(nodes.filter((n) => n.online).flatMap((n) => n.available.map((m) => m.name)))].sort();
    const hint = known.length ? `; the fleet has: ${known.slice(0, 20).join(", ")}${known.length > 20 ? ", …" : ""}` : `; no node reports any model${noOllama(registry)}`;
    return new RouteError(404, `model ${asked} not found on any node${hint}`);
  }
  const tried = failures.length ? `; tried ${failures.join("; ")}` : "";
  return new RouteError(503, `model ${asked} exists but no node can serve it right now: ${holders.join(", ")}${tried}`, retries, excluded, 5);
}

/** Why nothing is there, when it is that no Ollama answers: which, and how to start one. */
function noOllama(registry: Registry): string {
  const down = ollamaDown(registry.all(), (n) => registry.shownOllamaUrl(n));
  return down.length ? ` (${down.map((d) => d.finding).join("; ")}): ${START_OLLAMA}` : "";
}
