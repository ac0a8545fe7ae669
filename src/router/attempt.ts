// The one attempt loop, for every kind of request (Ollama, MLX, images, transcription, native
// embeddings): the candidates in order; on each, a slot on its node:model queue (so /fleet/queue,
// the rebalancer and the drain see every request), then the call. A failure before the first byte
// (a NodeFailure, no slot in time) moves on to the next candidate, at most routing.maxRetries more,
// while the request's one first-byte budget lasts; a RouteError from a call is the answer of that
// node, with the nodes that failed before it.
import { NodeFailure, RouteError } from "../errors.ts";
import { Moved, QueueFull, type Queues, type Slot, SlotTimeout } from "../fleet/queues.ts";

/** Where a request can run: a node, and the model whose queue it waits in there. */
export interface Candidate {
  nodeId: string;
  model: string;
}

/** What was tried when no candidate answered, for the error that says so. */
export interface Tried {
  /** "node: why", for each node that failed. */
  failures: string[];
  /** The nodes that failed, in order. */
  excluded: string[];
  /** How many candidates were tried after the first (X-Fleet-Retries): 0 when the only try failed. */
  retries: number;
  /** Candidates whose queue already held its most waiting requests. */
  full: number;
}

export interface Attempt<C extends Candidate, T> {
  queues: Queues;
  /** routing.maxRetries: how many candidates may be tried after the first. */
  maxRetries: number;
  /** The request's wait for its first byte, over every candidate: slot waits and calls spend one budget, never one each. */
  waitMs: number;
  signal: AbortSignal;
  /** How many requests run at once on a node's queue: the registry's nodes[].parallel for Ollama. */
  slots: { parallel(nodeId: string): number };
  /** The most requests that may wait on a queue (MLX servers' admission control); none: no cap. */
  maxPending?: number;
  /** The request's prompt tokens, counted in each queue it waits and runs on (the estimate's work ahead); none: 0. */
  promptTokens?: number;
  /** Calls the candidate once it holds its slot; `excluded` lists the nodes that failed before it, `leftMs` what is left of the budget. */
  call(c: C, slot: Slot, excluded: string[], leftMs: number): Promise<T>;
  exhausted(tried: Tried): RouteError;
}

/** For the node services, which take their jobs in their own order (one image, one transcription at a time). */
export const UNCAPPED = { parallel: () => Infinity };

/**
 * The first answer a candidate gives; it holds its slot, for the caller to release. A generator of candidates is told,
 * as it is asked for the next, the node the last was moved off as a load there evicts its model (Moved.evicted): that
 * node may take the request back, and a source that ranks the nodes again may send it there.
 */
export async function attempt<C extends Candidate, T>(candidates: Iterable<C, unknown, string | undefined>, a: Attempt<C, T>): Promise<T> {
  // Made at the first failure: most requests are answered by their first candidate.
  let tried: Tried | null = null;
  let attempts = 0;
  // Set at the first candidate (scoring it takes no budget), so a first call given all of it says so.
  let deadline: number | null = null;
  /** No candidate has spent any of the budget yet. */
  let first = true;
  const movedFrom: C[] = [];
  const source = thenAgain(candidates, movedFrom);
  let back: string | undefined;
  for (let next = source.next(); !next.done; next = source.next(back)) {
    const c = next.value;
    back = undefined;
    if (attempts > a.maxRetries) break;
    if (tried?.excluded.includes(c.nodeId)) continue;
    // The first candidate always gets its try; a later one only while the budget lasts.
    if (deadline === null) deadline = performance.now() + a.waitMs;
    else if (deadline - performance.now() < MIN_TRY_MS) break;
    attempts++;
    let slot: Slot;
    try {
      const taken = a.queues.acquire(c.nodeId, c.model, a.slots.parallel(c.nodeId), Math.max(0, Math.round(deadline - performance.now())), a.signal, a.maxPending, a.promptTokens);
      slot = taken instanceof Promise ? await taken : taken;
    } catch (e) {
      first = false;
      if (a.signal.aborted) throw e;
      // Moved: not a failure of the node, so not a retry; the next candidate gets it, and this one again at the end.
      if (e instanceof Moved) {
        attempts--;
        movedFrom.push(c);
        if (e.evicted) back = c.nodeId;
      } else if (e instanceof QueueFull) (tried ??= none()).full++;
      else if (e instanceof SlotTimeout) tried = failed(tried, c.nodeId, e);
      else throw e;
      continue;
    }
    // The first candidate's budget is the whole wait less its time in the queue: the turn of the event loop between
    // taking the slot and calling (a few ms on a busy machine) is not the node's to lose.
    const leftMs = first ? a.waitMs - slot.waitedMs : deadline - performance.now();
    first = false;
    try {
      return await a.call(c, slot, tried?.excluded ?? NO_NODES, leftMs);
    } catch (e) {
      slot.release("failed");
      // Cut by the client, the deadline or a stop: herd's answer, not the node's.
      if (e instanceof RouteError) throw e.from(a.signal.aborted ? null : c.nodeId, tried?.excluded ?? NO_NODES);
      if (!(e instanceof NodeFailure)) throw e;
      tried = failed(tried, c.nodeId, e);
    }
  }
  throw a.exhausted({ ...(tried ?? none()), retries: Math.max(0, attempts - 1) });
}

/**
 * The candidates, then those a request was moved off, once more: a request moved off its node is not lost when the
 * others cannot take it. Each is tried again once; `again` grows while the candidates are read.
 */
function* thenAgain<C>(candidates: Iterable<C, unknown, string | undefined>, again: readonly C[]): Generator<C, void, string | undefined> {
  yield* candidates;
  const retried = again.length;
  for (let i = 0; i < retried; i++) yield again[i]!;
}

function none(): Tried {
  return { failures: [], excluded: [], full: 0, retries: 0 };
}

function failed(tried: Tried | null, nodeId: string, e: Error): Tried {
  const t = tried ?? none();
  t.failures.push(`${nodeId}: ${e.message}`);
  t.excluded.push(nodeId);
  return t;
}

/** Less of the budget than this is no try at all (a timer may fire a little early, leaving a sliver). */
const MIN_TRY_MS = 10;

/** The nodes excluded before a first candidate that answers: shared, never written to. */
const NO_NODES: string[] = [];
