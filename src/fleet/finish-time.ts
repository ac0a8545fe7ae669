// When a request would finish on each candidate node, in ms: the wait for a slot, the load of a
// model not resident (after evicting models to make room in the order Ollama's scheduler picks them,
// the idle ones first, then waiting for a busy one's requests to end, and paying again for one that
// will be asked for soon) or the reload of
// one loaded with another context, the prefill of the prompt and the decode of the expected reply,
// all from the speeds herd learned (or predicts) of that node. The soonest wins, or for a stream the
// soonest first token with the decode counted in part (the client reads it as it comes); a node
// whose speed herd has not learned for the model gets a bounded share of the requests it could
// serve nearly as well, so herd learns it.
// Pure: the dispatcher gathers the inputs, so the choice is easy to test.

/** A node that could serve the request, as the estimate reads it. */
export interface FinishCandidate {
  nodeId: string;
  /** The model is loaded there (or loading: a request of it runs there), so no load comes first. */
  resident: boolean;
  /** What the model takes in memory loaded there: its weights and the KV cache of the context it would get. */
  sizeGb: number;
  /**
   * Its node:model queue: waiting, running, when it last got a request (ms epoch; 0 = never), and the prompt tokens of
   * those waiting and running (absent: each taken to be this request's).
   */
  queue: { pending: number; inFlight: number; lastDispatchAt: number; promptTokens?: number };
  /** How long the oldest request running there has run (0 or absent: none), which is that much nearer its end. */
  runningForMs?: number;
  /** Resident only because a request of it runs there, not yet reported loaded: that request began with its load. */
  loading?: boolean;
  /** Of a model loading there, how long until herd expects the load it sent done, its wait for room and the loads ahead of it included; absent: the load's own time, less what the request has run. */
  loadLeftMs?: number;
  /** How long the loads herd sent the node before are still expected to take (fleet/node-loads.ts): a load or reload there waits for them. */
  loadsAheadMs?: number;
  /** Requests the node runs at once per model. */
  slots: number;
  /** `atBest`: what exploring the node may find, where its prior is held below the fleet's (fleet/speeds.ts). */
  speed: { decodeTps: number; prefillTps: number; loadMs: number; atBest?: { decodeTps: number; prefillTps: number } };
  /**
   * Room for the model there: the GB free now (null: the node's memory is unknown), how many more models it loads
   * before Ollama unloads one (OLLAMA_MAX_LOADED_MODELS), and the loaded models a load may evict, in the order the
   * node evicts them (the idle ones, then the busy ones), each with its size, how long its running requests still take
   * and, for one asked for lately, the load it would then need again; null when the model is resident (no load needs
   * room). `evictsAll`: the list holds every model loaded there, so a
   * shortfall after them all is herd's own accounting (free memory reported before a load or unload, a context
   * guessed, a model herd took for evicted still running), not the node's: Ollama steps an automatic context down to
   * fit and unloads a busy model once its requests end, and the node is not left out.
   */
  memory: { freeGb: number | null; modelsFree: number; evictable: EvictableModel[]; evictsAll?: boolean } | null;
  /** herd has learned this model's speed on the node lately: nothing to explore there. */
  speedKnown?: boolean;
  /** Prompt tokens the node likely still holds cached for this request (session affinity); 0 when none. */
  cachedPrefixTokens: number;
  /**
   * The model is loaded there with another context than herd would send this request (router/body-rules.ts): Ollama
   * reloads its runner, once every request on it has finished, and the KV cache (any cached prefix) goes with it.
   */
  reloadsRunner: boolean;
  /**
   * The memory the node is known or shown to have, in GB: reported or declared, else the most its models need (those
   * loaded now together, or the biggest it keeps on disk): a node keeps the models it can run. The tie-break among
   * nodes herd has no speeds of yet.
   */
  evidentMemoryGb: number;
}

/** A loaded model, as an eviction sees it. */
export interface EvictableModel {
  name: string;
  sizeGb: number;
  /** Asked for lately: evicting it costs its next request this load (ms); 0 when it has not been. */
  reloadMs: number;
  /** Its requests running there end in about this long (ms): Ollama unloads it then; 0 when none runs. */
  busyMs: number;
}

export interface FinishRequest {
  promptTokens: number;
  /** The client reads the answer as it comes: the first token weighs more than the last. */
  stream?: boolean;
  /** This request may go to a node whose speed herd has not learned (the caller keeps that to a bounded share). */
  explore?: boolean;
  /** The reply's expected length: its cap, else what the model usually produces. */
  outputTokens: number;
  /** What the model usually produces: the length of the requests queued ahead. */
  typicalOutputTokens: number;
}

/** The estimate's parts, in ms: the trace's breakdown. */
export type FinishBreakdown = {
  wait_ms: number;
  load_ms: number;
  /** The load again, of a model loaded with another context than this request is sent (reloadsRunner); 0 otherwise. */
  reload_ms: number;
  evict_ms: number;
  /** The wait for a busy model the load evicts to finish its running requests; absent when none. */
  memory_wait_ms?: number;
  /** The wait for the loads herd sent the node before this one (Ollama loads one at a time); absent when none. */
  loads_ahead_ms?: number;
  /** The loads that evicting models asked for lately will cost their next requests. */
  reload_evicted_ms?: number;
  prefill_ms: number;
  decode_ms: number;
  /** The prompt tokens taken to be cached there (session affinity), not in ms; absent when none. */
  cached_tokens?: number;
};

export interface Estimated<C> {
  candidate: C;
  /** The predicted finish, in ms from now. */
  ms: number;
  /** What the ranking compares: the finish, or for a stream the first token and part of the decode. */
  costMs: number;
  breakdown: FinishBreakdown;
  /** The idle models Ollama would evict there to load this one. */
  evicts: string[];
}

/** Ollama's unload of an idle model before a load: short, but not free. */
export const EVICT_MS = 500;
/** Estimates this close to the best (5%, or 50 ms: below that they are noise) are a tie, broken by who was dispatched to least recently. */
export const TIE_RATIO = 1.05;
export const TIE_MS = 50;
/**
 * A cold load elsewhere beats the node that has the model only when the wait there is longer than the whole of the
 * request elsewhere, load and the reloads its evictions cause included, by this much: a second copy is loaded when the
 * queue costs more than it, and a model is not traded back and forth between two idle nodes.
 */
export const SPILL_MIN_MS = 1000;
/** Of a stream's decode, the share its ranking counts: the client reads the tokens as they come. */
export const STREAM_DECODE_WEIGHT = 0.5;
/** A node whose speed for the model herd has not learned is explored when it would cost at most this × the best (and TIE_MS). */
export const EXPLORE_RATIO = 1.5;

/**
 * What is left of a request expected to take `expectedMs`, `elapsedMs` in. One past its expected time is expected to
 * run as long again as it is late (stuck behind a load inside the node, or a reply far longer than usual): the longer
 * it runs, the longer the wait behind it, not the shorter.
 */
export function leftOfMs(expectedMs: number, elapsedMs: number): number {
  return elapsedMs <= expectedMs ? expectedMs - elapsedMs : elapsedMs - expectedMs;
}

/** The estimate for one candidate, or why it cannot serve at all. */
export function estimateFinish<C extends FinishCandidate>(c: C, req: FinishRequest): Estimated<C> | { excluded: string } {
  const prefillMs = (tokens: number) => (Math.max(0, tokens) / c.speed.prefillTps) * 1000;
  const decodeMs = (tokens: number) => (tokens / c.speed.decodeTps) * 1000;
  const evicts: string[] = [];
  let reloadEvictedMs = 0;
  let memoryWaitMs = 0;
  if (!c.resident && c.memory) {
    // Ollama unloads one model per model past its count, then more until the new one fits.
    const unloads = Math.max(0, 1 - c.memory.modelsFree);
    let room = c.memory.freeGb ?? Infinity;
    for (const m of c.memory.evictable) {
      if (room >= c.sizeGb && evicts.length >= unloads) break;
      room += m.sizeGb;
      evicts.push(m.name);
      reloadEvictedMs += m.reloadMs;
      memoryWaitMs = Math.max(memoryWaitMs, m.busyMs);
    }
    if (room < c.sizeGb && !c.memory.evictsAll) return { excluded: `model needs ${round(c.sizeGb)} GB; ${round(room)} GB free even after evicting the models loaded there` };
    if (evicts.length < unloads && !c.memory.evictsAll) return { excluded: "the node holds as many models as Ollama loads at once, none of them free to unload" };
  }
  const reload = c.reloadsRunner;
  const cached = reload ? 0 : c.cachedPrefixTokens;
  const loadsAheadMs = c.resident && !reload ? 0 : (c.loadsAheadMs ?? 0);
  // The requests ahead of this one (those queued, and those running beyond the slots but one) are taken to be of the
  // queue's mean prompt and the usual reply: a long prompt ahead delays a short one behind it by its prefill.
  // A reload waits for all of them: the runner restarts only once idle, so the last batch runs whole first.
  const slots = Math.max(1, c.slots);
  // The oldest request running is partly done; while the model loads, every request there waits for what is left of it,
  // and the one that loads it has begun nothing else.
  const queued = c.queue.pending + c.queue.inFlight;
  const aheadPrompt = c.queue.promptTokens !== undefined && queued > 0 ? c.queue.promptTokens / queued : req.promptTokens;
  const serviceMs = prefillMs(aheadPrompt) + decodeMs(req.typicalOutputTokens);
  const runningFor = c.runningForMs ?? 0;
  const loadLeftMs = c.loading ? (c.loadLeftMs ?? Math.max(0, c.speed.loadMs - runningFor)) : 0;
  const elapsed = loadLeftMs > 0 ? 0 : Math.max(0, runningFor - (c.loading ? c.speed.loadMs : 0));
  const begun = serviceMs - leftOfMs(serviceMs, elapsed);
  const waitMs =
    loadLeftMs +
    (reload
      ? Math.max(0, Math.ceil((c.queue.pending + c.queue.inFlight) / slots) * serviceMs - begun)
      : c.queue.inFlight < c.slots
        ? 0
        : Math.max(0, ((c.queue.pending + c.queue.inFlight - c.slots + 1) * serviceMs - begun) / slots));
  const breakdown: FinishBreakdown = {
    wait_ms: round(waitMs),
    load_ms: c.resident ? 0 : round(c.speed.loadMs),
    reload_ms: reload ? round(c.speed.loadMs) : 0,
    evict_ms: evicts.length * EVICT_MS,
    ...(memoryWaitMs > 0 ? { memory_wait_ms: round(memoryWaitMs) } : {}),
    ...(loadsAheadMs > 0 ? { loads_ahead_ms: round(loadsAheadMs) } : {}),
    ...(reloadEvictedMs > 0 ? { reload_evicted_ms: round(reloadEvictedMs) } : {}),
    prefill_ms: round(prefillMs(req.promptTokens - cached)),
    decode_ms: round(decodeMs(req.outputTokens)),
    ...(cached > 0 ? { cached_tokens: cached } : {}),
  };
  // The load waits for the loads ahead of it and for a busy model's requests to end; the slot wait runs beside them.
  const ahead = Math.max(breakdown.wait_ms, breakdown.memory_wait_ms ?? 0, breakdown.loads_ahead_ms ?? 0);
  const ms = round(ahead + breakdown.load_ms + breakdown.reload_ms + breakdown.evict_ms + breakdown.prefill_ms + breakdown.decode_ms);
  // The reloads an eviction causes fall on other requests: they weigh in the choice, not in this request's finish.
  const costMs = ms + reloadEvictedMs - (req.stream ? breakdown.decode_ms * (1 - STREAM_DECODE_WEIGHT) : 0);
  return { candidate: c, ms, costMs, breakdown, evicts };
}

/**
 * The candidates by expected finish (their cost), soonest first, and those that cannot serve. A node that has the
 * model keeps it unless the wait there alone is longer than the whole request on another node, load included
 * (hysteresis: two idle nodes do not trade a model back and forth); near-ties go to the one dispatched to least
 * recently, so equal nodes share the load. With `explore`, a node that has the model but whose speed for it is not
 * learned comes first where it is nearly as good.
 * A candidate that cannot fit even after evicting all it holds is excluded, unless none fits: then all are ranked as if
 * their memory were unknown (what a node reports free may be out of date; it refuses the load if it is not).
 */
export function rankByFinishTime<C extends FinishCandidate>(candidates: readonly C[], req: FinishRequest): { ranked: Estimated<C>[]; excluded: { nodeId: string; reason: string }[] } {
  const ranked: Estimated<C>[] = [];
  const excluded: { nodeId: string; reason: string }[] = [];
  for (const c of candidates) {
    const e = estimateFinish(c, req);
    if ("excluded" in e) excluded.push({ nodeId: c.nodeId, reason: e.excluded });
    else ranked.push(e);
  }
  if (!ranked.length) {
    // None fits by what herd knows of their memory: try them rather than refuse, the node knows better.
    return { ranked: excluded.length ? rankByFinishTime(candidates.map((c) => ({ ...c, memory: null })), req).ranked : [], excluded };
  }
  ranked.sort((a, b) => a.costMs - b.costMs || a.candidate.nodeId.localeCompare(b.candidate.nodeId));
  const hot = ranked.find((e) => e.candidate.resident);
  const best = ranked[0]!;
  // A second copy is worth its load once the queue on the node that has the model costs more than the whole of it.
  const spills = hot && hot.breakdown.wait_ms > best.ms + (best.breakdown.reload_evicted_ms ?? 0) + SPILL_MIN_MS;
  const lead = hot && !best.candidate.resident && !spills ? hot : best;
  // Exploring costs no load: only a node that has the model, nearly as soon at the best herd can hope of it.
  const unexplored = req.explore
    ? ranked.find((e) => e.candidate.resident && e.candidate.speedKnown === false && hopedCostMs(e, req) <= lead.costMs * EXPLORE_RATIO + TIE_MS)
    : undefined;
  if (unexplored) return { ranked: [unexplored, ...ranked.filter((e) => e !== unexplored)], excluded };
  const tied = ranked.filter((e) => e.candidate.resident === lead.candidate.resident && e.costMs <= lead.costMs * TIE_RATIO + TIE_MS);
  // Among those never dispatched to (a model loaded nowhere), the node with more slots: it takes a stream of requests
  // better; then the bigger machine, as far as herd can tell: with nothing learned, the estimates are the same priors,
  // and a bigger Mac is the faster one far more often than not (more memory comes with more bandwidth).
  const prefersB = (a: Estimated<C>, b: Estimated<C>) =>
    a.candidate.queue.lastDispatchAt - b.candidate.queue.lastDispatchAt || b.candidate.slots - a.candidate.slots || b.candidate.evidentMemoryGb - a.candidate.evidentMemoryGb;
  const first = tied.reduce((a, b) => (prefersB(a, b) > 0 ? b : a));
  return { ranked: [first, ...ranked.filter((e) => e !== first)], excluded };
}

/** The candidate's cost at the best herd can hope of its speed (FinishCandidate.speed.atBest), else its cost. */
function hopedCostMs(e: Estimated<FinishCandidate>, req: FinishRequest): number {
  const atBest = e.candidate.speed.atBest;
  if (!atBest) return e.costMs;
  const hoped = estimateFinish({ ...e.candidate, speed: { ...e.candidate.speed, ...atBest } }, req);
  return "excluded" in hoped ? e.costMs : hoped.costMs;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
