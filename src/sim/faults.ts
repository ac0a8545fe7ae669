// Fault injection shared by every sim backend. A fault set is plain JSON so
// it can be set at start, by setFaults(), or remotely through POST /_sim.
// Faults apply to every API route; the /_sim control surface is never faulted.

export interface Faults {
  /** Answer with a 500 shaped like the backend's own errors. */
  error500?: boolean;
  /** Accept the request and never answer (until the client or the sim gives up). */
  hang?: boolean;
  /**
   * Send at most N tokens, then drop the connection abruptly: no final chunk,
   * no [DONE], no terminating chunk. A non-streaming request gets no response.
   */
  dieAfterTokens?: number;
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
const COUNTS = ["dieAfterTokens", "firstByteDelayMs", "tokenDelayMs"] as const;

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
  return faults;
}

export function tokenIntervalMs(faults: Faults, tokensPerSecond: number): number {
  return faults.tokenDelayMs ?? 1000 / tokensPerSecond;
}
