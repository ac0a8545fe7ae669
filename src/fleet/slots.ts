// How many requests a node really runs at once, learned from its own answers when nothing declares it (an agentless
// node, or one whose OLLAMA_NUM_PARALLEL the config does not state). herd starts from the prior (what the node's
// Ollama release does by default: fleet/ollama-releases.ts). An answer's durations (load + prompt eval + eval) are the
// time it ran; herd's wall time from sending it to its last byte is longer by the time it waited inside the node for
// a parallel slot. A long wait while herd had others running there means the node has no more slots than those
// others: herd then holds the rest in its own queue, where its estimate and the rebalancer see them. A node that
// keeps running its number at once without a wait is tried with one slot more (an operator may have raised
// OLLAMA_NUM_PARALLEL), after more answers each time such a try was proved wrong. Pure: no clock.
// What it learned outlives a restart (store/slots.ts): a node's slots are saved when they change.
import type { SlotRow } from "../store/slots.ts";

/** A gap this long (and this share of the wall time) is a wait inside the node, not herd's or the network's overhead. */
export const WAIT_MIN_MS = 250;
export const WAIT_SHARE = 0.2;
/** Answers run at the node's number at once, without a wait, before herd tries one slot more (doubled per wrong try, up to 64 times). */
export const RAISE_AFTER = 20;
const MAX_PATIENCE = 6;
/** More slots than herd ever tries: Ollama's own ceiling is the machine's memory. */
export const MAX_SLOTS = 16;

/** One answer as the learner reads it. */
export interface SlotSample {
  /** Requests herd had running on the node:model, besides this one, when it sent it. */
  othersInFlight: number;
  /** From sending the request to its last byte. */
  wallMs: number;
  /** The answer's load + prompt eval + eval durations: the time the node spent on it. */
  ranMs: number;
}

interface NodeSlots {
  /** What was learned; null while the node runs its prior. */
  learned: number | null;
  /** Clean answers at the node's number since the last change. */
  clean: number;
  /** Tries of one slot more that a wait then proved wrong. */
  wrongTries: number;
}

export class LearnedSlots {
  private readonly nodes = new Map<string, NodeSlots>();
  /** Nodes whose slots changed since the last takeChanged(). */
  private readonly changed = new Set<string>();

  /** `prior`: what herd takes a node to run before it learns otherwise. `rows`: what the store kept. */
  constructor(
    private readonly prior: (nodeId: string) => number,
    rows: readonly SlotRow[] = [],
  ) {
    for (const r of rows) if (r.slots !== null && r.slots >= 1 && r.slots <= MAX_SLOTS) this.nodes.set(r.nodeId, { learned: r.slots, clean: 0, wrongTries: 0 });
  }

  observe(nodeId: string, s: SlotSample): void {
    const waited = s.wallMs - s.ranMs >= Math.max(WAIT_MIN_MS, WAIT_SHARE * s.wallMs);
    const node = this.nodes.get(nodeId) ?? { learned: null, clean: 0, wrongTries: 0 };
    this.nodes.set(nodeId, node);
    const slots = node.learned ?? this.prior(nodeId);
    if (waited) {
      node.clean = 0;
      // A wait with nothing else of herd's running there is something else (a load another client asked for).
      if (s.othersInFlight >= 1 && s.othersInFlight < slots) {
        node.wrongTries = Math.min(node.wrongTries + 1, MAX_PATIENCE);
        this.learn(nodeId, node, s.othersInFlight);
      }
      return;
    }
    if (s.othersInFlight + 1 < slots || slots >= MAX_SLOTS) return;
    if (++node.clean < RAISE_AFTER * 2 ** node.wrongTries) return;
    this.learn(nodeId, node, slots + 1);
  }

  /** The slots learned for the node; null while it has shown nothing but its prior. */
  slots(nodeId: string): number | null {
    return this.nodes.get(nodeId)?.learned ?? null;
  }

  /** The nodes whose slots changed since the last call, for the store. */
  takeChanged(): SlotRow[] {
    const rows = [...this.changed].map((nodeId) => ({ nodeId, slots: this.slots(nodeId) }));
    this.changed.clear();
    return rows;
  }

  /** Back at the prior, nothing is learned any more (the store's row goes). */
  private learn(nodeId: string, node: NodeSlots, slots: number): void {
    node.learned = slots === this.prior(nodeId) ? null : slots;
    node.clean = 0;
    this.changed.add(nodeId);
  }
}
