// One loaded model's KV cache slots, as Ollama's runner keeps them: each
// parallel slot holds the tokens of the last sequence it processed (prompt and
// answer). A request takes the free slot sharing the longest prefix with its
// prompt (the lowest slot on a tie, so an unrelated prompt overwrites slot 0
// even when another slot is empty, as Ollama's single-user default does) and
// evaluates only what follows that prefix.

export interface CacheSlot {
  tokens: number[];
  inUse: boolean;
}

export interface Claim {
  slot: CacheSlot;
  /** Prompt tokens already in the slot: their prefill is skipped. */
  cached: number;
}

export class PromptSlots {
  private readonly slots: CacheSlot[] = [];

  /** `limit`: OLLAMA_NUM_PARALLEL; unlimited, a slot is added whenever all are busy. */
  constructor(private readonly limit = Infinity) {}

  claim(prompt: readonly number[]): Claim {
    let best: Claim | undefined;
    for (const slot of this.slots) {
      if (slot.inUse) continue;
      const shared = commonPrefix(slot.tokens, prompt);
      if (!best || shared > best.cached) best = { slot, cached: shared };
    }
    if (!best) {
      // The residency's parallel limit lets no more requests run than there are slots.
      if (this.slots.length >= this.limit) throw new Error("no free cache slot");
      best = { slot: { tokens: [], inUse: false }, cached: 0 };
      this.slots.push(best.slot);
    }
    best.slot.inUse = true;
    return { slot: best.slot, cached: skippedPrefill(best.cached, prompt.length) };
  }

  /** The slot now holds `tokens` (what the request evaluated) and is free again. */
  release(slot: CacheSlot, tokens: number[]): void {
    slot.tokens = tokens;
    slot.inUse = false;
  }
}

/** Of a prompt sharing `shared` tokens with a slot, those whose prefill is skipped: a prompt wholly cached still evaluates its last token, to have logits to sample from. */
export function skippedPrefill(shared: number, promptLength: number): number {
  return Math.min(shared, Math.max(0, promptLength - 1));
}

export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}
