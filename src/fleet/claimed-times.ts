// What a node says its answer took (Ollama's load, prompt eval and eval durations) is its word; herd has its own
// clock: from sending the request to the answer's first byte, and to its last. Before the answers teach the node's
// speed (speeds.ts), each claimed duration is held to that clock: none may be longer than the whole wait, and the
// parts may not add up to less than what herd waited for them, less a small allowance for the network and herd's
// own turn of the event loop. A node that claims a nanosecond for a thousand tokens but took 1.5 s is learned at
// 1.5 s. The slot learner (slots.ts) reads the claims only capped, as a wait inside the node is what it looks for. Pure.
import type { Usage } from "../core/events.ts";

/** herd's own timing of one answer, in ms from sending the request. */
export interface Clock {
  firstByteMs: number;
  lastByteMs: number;
  /** The answer was whole in its first read (not streamed, or short): its first byte came with its end. */
  whole: boolean;
}

/** What herd's clock may run over a node's honest figures: the network's round trips and herd's own delays. */
export const ALLOWANCE_MS = 20;
export const ALLOWANCE_SHARE = 0.1;

/** The least a node may claim of what herd measured as `ms`, in ns. */
function least(ms: number): number {
  return Math.max(0, ms - ALLOWANCE_MS - ALLOWANCE_SHARE * ms) * 1e6;
}

/**
 * The usage with its durations held to herd's clock. A streamed answer's decode took at least from its first byte
 * to its last (an MLX server, which gives no durations, is timed so), and what came before its first byte (the load,
 * the prompt, the first token) at least herd's wait for that byte: a shortfall goes to the prompt. A whole answer's
 * parts took at least the whole wait: a shortfall goes to the decode. A part the node does not claim is not made up.
 */
export function heldToClock(usage: Usage, clock: Clock): Usage {
  const wallNs = clock.lastByteMs * 1e6;
  const capped = (ns: number | undefined) => (ns === undefined ? undefined : Math.min(ns, wallNs));
  const loadNs = capped(usage.loadNs);
  let promptNs = capped(usage.promptNs);
  let evalNs = capped(usage.evalNs);
  if (clock.whole) {
    const short = least(clock.lastByteMs) - ((loadNs ?? 0) + (promptNs ?? 0) + (evalNs ?? 0));
    if (evalNs !== undefined && short > 0) evalNs += short;
  } else {
    const decodeMs = clock.lastByteMs - clock.firstByteMs;
    evalNs = Math.min(wallNs, evalNs === undefined ? decodeMs * 1e6 : Math.max(evalNs, least(decodeMs)));
    const firstToken = evalNs / Math.max(1, usage.completionTokens ?? 1);
    const short = least(clock.firstByteMs) - ((loadNs ?? 0) + (promptNs ?? 0) + firstToken);
    if (promptNs !== undefined && short > 0) promptNs = Math.min(wallNs, promptNs + short);
  }
  return { ...usage, loadNs, promptNs, evalNs, totalNs: capped(usage.totalNs) };
}

/** A duration a node claims (a load's), held to the call's own time `ms` as above, in ns. */
export function claimHeld(claimedNs: number, ms: number): number {
  return Math.min(ms * 1e6, Math.max(claimedNs, least(ms)));
}
