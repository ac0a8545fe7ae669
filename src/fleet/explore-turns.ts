// Whose turn it is to explore: of a model's requests that have a node herd has not learned (or not lately) among
// their candidates, one in EXPLORE_EVERY may go there (fleet/finish-time.ts), so herd learns the node at a bounded
// cost to the model's traffic. A count per model, bounded whatever names clients send.
import { nameOf } from "./speeds.ts";

/** Of a model's requests that have a node not learned (or stale) among their candidates, one in this many may explore it. */
export const EXPLORE_EVERY = 8;
/** A bound on the models counted, whatever names clients send. */
const MAX_MODELS = 1000;

export class ExploreTurns {
  /** Per model, its requests that could have explored a node since the last that did. */
  private readonly counts = new Map<string, number>();

  /** Whether this request of `model`, which has a node not learned for it among its candidates, may go there. */
  due(model: string): boolean {
    const name = nameOf(model);
    const count = (this.counts.get(name) ?? 0) + 1;
    if (!this.counts.has(name) && this.counts.size >= MAX_MODELS) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(name, count % EXPLORE_EVERY);
    return count % EXPLORE_EVERY === 0;
  }
}
