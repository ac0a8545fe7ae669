// The parallel slots herd learned of each node (fleet/slots.ts) in the store: read once at start, written by the
// learned figures' saver (store/saver.ts) when they changed, never on a request's way.
import type { Database } from "bun:sqlite";
import { log } from "../log.ts";

/** One node's learned slots; null: nothing learned any more (back to the prior), its row goes. */
export interface SlotRow {
  nodeId: string;
  slots: number | null;
}

export function readSlots(db: Database): SlotRow[] {
  return db.query<{ node_id: string; slots: number }, []>("SELECT node_id, slots FROM node_slots").all().map((r) => ({ nodeId: r.node_id, slots: r.slots }));
}

/** Writes the rows in one transaction; a store that refuses them is logged (they are learned again), not thrown. */
export function writeSlots(db: Database, rows: SlotRow[]): void {
  if (!rows.length) return;
  try {
    const upsert = db.prepare("INSERT OR REPLACE INTO node_slots (node_id, slots) VALUES (?, ?)");
    const remove = db.prepare("DELETE FROM node_slots WHERE node_id = ?");
    db.transaction(() => {
      for (const r of rows) r.slots === null ? remove.run(r.nodeId) : upsert.run(r.nodeId, r.slots);
    })();
  } catch (e) {
    log.warn(`learned slots not saved (${(e as Error).message}); they are learned again from the next answers`);
  }
}
