// Fault injection shared by every sim backend. A fault set is plain JSON so
// it can be set at start, by setFaults(), or remotely through POST /_sim.
// Faults apply to every API route; the /_sim control surface is never faulted
// (but for flapMs: a node that is down is down, /_sim included).

export interface Faults {
  /** Answer as the backend does when its runner fails: a 500 shaped like its own errors (Ollama's /api/embed: a 400, as it answers any runner error there). */
  error500?: boolean;
  /** Accept the request and never answer (until the client or the sim gives up). */
  hang?: boolean;
  /**
   * Send at most N tokens, then drop the connection abruptly: no final chunk,
   * no [DONE], no terminating chunk. A non-streaming request gets no response.
   */
  dieAfterTokens?: number;
  /**
   * After N tokens, send a line that is not JSON where the next chunk was due, then end the response
   * cleanly. 0 spoils the first line, and a non-streaming answer whatever N is.
   */
  garbageAfterTokens?: number;
  /**
   * After N tokens, send the first half of the next chunk (no newline), then end the response cleanly:
   * a stream cut mid-line. 0 cuts the first line, and a non-streaming answer whatever N is.
   */
  truncateAfterTokens?: number;
  /**
   * Flap: the node is up for this long, then down (its port closed, every connection cut, as a
   * crashed or sleeping server) for as long, and so on, starting up. While down, /_sim is down too.
   */
  flapMs?: number;
  /** Wait this long before sending anything. */
  firstByteDelayMs?: number;
  /** Per-token delay; overrides the node's tokensPerSecond. */
  tokenDelayMs?: number;
  /**
   * Write tool calls as botched text instead of a call (single quotes, a trailing comma, a
   * missing brace), as local models sometimes do; Ollama then returns them as content.
   */
  botchedToolCalls?: boolean;
}

const FLAGS = ["error500", "hang", "botchedToolCalls"] as const;
const COUNTS = ["dieAfterTokens", "garbageAfterTokens", "truncateAfterTokens", "flapMs", "firstByteDelayMs", "tokenDelayMs"] as const;

// Validates a fault set arriving as untrusted JSON; throws with a message
// meant for whoever typed the curl command.
export function parseFaults(value: unknown): Faults {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error("faults must be an object");
  }
  const faults: Faults = {};
  for (const [key, v] of Object.entries(value)) {
    if ((FLAGS as readonly string[]).includes(key)) {
      if (typeof v !== "boolean") throw new Error(`faults.${key} must be a boolean`);
      if (v) faults[key as (typeof FLAGS)[number]] = true;
    } else if ((COUNTS as readonly string[]).includes(key)) {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
        throw new Error(`faults.${key} must be a non-negative integer`);
      }
      faults[key as (typeof COUNTS)[number]] = v;
    } else {
      throw new Error(`unknown fault "${key}"`);
    }
  }
  if (faults.flapMs !== undefined && faults.flapMs < 100) throw new Error("faults.flapMs must be at least 100");
  return faults;
}

export function tokenIntervalMs(faults: Faults, tokensPerSecond: number): number {
  return faults.tokenDelayMs ?? 1000 / tokensPerSecond;
}

/** What a garbage fault sends: what a proxy's error page or a corrupted stream looks like to a JSON reader. */
export const GARBAGE_LINE = "<html><body>\u0000\u00ff garbage, not JSON {\n";

/**
 * The bytes a garbage or truncate fault sends instead of `data` before the response ends, or null
 * to send `data` as it is. `tokens` counts the tokens generated so far, this frame's included.
 */
export function spoiled(faults: Faults, data: string, tokens: number, tail: boolean): { bytes: string; counter: "garbled" | "truncated" } | null {
  const due = (after: number | undefined) => after !== undefined && (tail || tokens > after);
  if (due(faults.garbageAfterTokens)) return { bytes: GARBAGE_LINE, counter: "garbled" };
  if (due(faults.truncateAfterTokens)) return { bytes: data.trimEnd().slice(0, Math.max(1, Math.floor(data.trimEnd().length / 2))), counter: "truncated" };
  return null;
}

/** Calls `phase(false)`, `phase(true)`, … every `periodMs` (the node starts up); returns the stop. */
export function flapping(periodMs: number, phase: (up: boolean) => void): () => void {
  let up = true;
  const timer = setInterval(() => {
    up = !up;
    phase(up);
  }, periodMs);
  return () => clearInterval(timer);
}
