// How many requests a node really runs at once, learned from its own answers when nothing declares it (an agentless
// node: no agent reports OLLAMA_NUM_PARALLEL). An answer's durations (load + prompt eval + eval) are the time it
// ran; herd's wall time from sending it to its last byte is longer by the time it waited inside the node for a
// parallel slot. A long wait while herd had others running there means the node has no more slots than those
// others: herd then holds the rest in its own queue, where its estimate and the rebalancer see them. A node that
// keeps running its learned number at once without a wait is tried with one slot more, slowly. Pure: no clock.
// What it learned outlives a restart (store/slots.ts): a node's slots are saved when they change.
import type { SlotRow } from "../store/slots.ts";

/** A gap this long (and this share of the wall time) is a wait inside the node, not herd's or the network's overhead. */
export const WAIT_MIN_MS = 250;
export const WAIT_SHARE = 0.2;
/** Answers run at the learned number at once, without a wait, before herd tries one slot more. */
export const RAISE_AFTER = 20;

/** One answer as the learner reads it. */
export interface SlotSample {
  /** Requests herd had running on the node:model, besides this one, when it sent it. */
  othersInFlight: number;
  /** From sending the request to its last byte. */
  wallMs: number;
  /** The answer's load + prompt eval + eval durations: the time the node spent on it. */
  ranMs: number;
}

export class LearnedSlots {
  /** node id → the slots learned and the clean answers since the last change. */
  private readonly nodes = new Map<string, { slots: number; clean: number }>();
  /** Nodes whose slots changed since the last takeChanged(). */
  private readonly changed = new Set<string>();

  /**
   * `assumed`: what herd takes the node to run before it learns otherwise, the ceiling of a raise. `rows`: what the
   * store kept (a row at or over the assumption says nothing, and is dropped).
   */
  constructor(
    private readonly assumed: number,
    rows: readonly SlotRow[] = [],
  ) {
    for (const r of rows) if (r.slots !== null && r.slots >= 1 && r.slots < assumed) this.nodes.set(r.nodeId, { slots: r.slots, clean: 0 });
  }

  observe(nodeId: string, s: SlotSample): void {
    const waited = s.wallMs - s.ranMs >= Math.max(WAIT_MIN_MS, WAIT_SHARE * s.wallMs);
    const known = this.nodes.get(nodeId);
    const slots = known?.slots ?? this.assumed;
    if (waited) {
      // A wait with nothing else of herd's running there is something else (a load another client asked for).
      if (s.othersInFlight >= 1 && s.othersInFlight < slots) this.learn(nodeId, s.othersInFlight);
      else if (known) known.clean = 0;
      return;
    }
    if (!known || s.othersInFlight + 1 < known.slots) return;
    if (++known.clean < RAISE_AFTER) return;
    this.learn(nodeId, known.slots + 1 >= this.assumed ? null : known.slots + 1);
  }

  /** The slots learned for the node; null while it has shown nothing less than assumed. */
  slots(nodeId: string): number | null {
    return this.nodes.get(nodeId)?.slots ?? null;
  }

  /** The nodes whose slots changed since the last call, for the store. */
  takeChanged(): SlotRow[] {
    const rows = [...this.changed].map((nodeId) => ({ nodeId, slots: this.slots(nodeId) }));
    this.changed.clear();
    return rows;
  }

  /** null: back to the assumption. */
  private learn(nodeId: string, slots: number | null): void {
    if (slots === null) this.nodes.delete(nodeId);
    else this.nodes.set(nodeId, { slots, clean: 0 });
    this.changed.add(nodeId);
  }
}
