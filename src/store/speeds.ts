// The learned speeds of each node:model (fleet/speeds.ts) in the store: read once at start,
// written in batches by the learned figures' saver (store/saver.ts), never on a request's way.
import type { Database } from "bun:sqlite";
import { log } from "../log.ts";

/** One node:model's learned rates; a rate is null until a sample big enough to mean something came. */
export interface SpeedRow {
  nodeId: string;
  /** The model's name: normalized by Ollama's rule (model-name.ts), an MLX model's as it is. */
  model: string;
  /** The model's weights in bytes, when the node listed them (0: unknown); what ties its rates to the node's speed factor. */
  sizeBytes: number;
  /** Output tokens per second (eval_count / eval_duration), a decaying average. */
  decodeTps: number | null;
  decodeSamples: number;
  /** Prompt tokens per second (prompt_eval_count / prompt_eval_duration). */
  prefillTps: number | null;
  prefillSamples: number;
  /** How long a real load of the model took (load_duration), in ms. */
  loadMs: number | null;
  loadSamples: number;
  /** Last sample, ms epoch. */
  updatedAt: number;
}

type Stored = { node_id: string; model: string; size_bytes: number; decode_tps: number | null; decode_samples: number; prefill_tps: number | null; prefill_samples: number; load_ms: number | null; load_samples: number; updated_at: number };

/** The rows read back at start, the most recently learned first: a bound whatever the store grew to. */
export const MAX_STORED_SPEEDS = 10_000;

/** What the store kept, as it kept it: the fleet bounds each figure (fleet/speeds.ts). */
export function readSpeeds(db: Database): SpeedRow[] {
  return db.query<Stored, [number]>("SELECT * FROM node_speeds ORDER BY updated_at DESC LIMIT ?").all(MAX_STORED_SPEEDS).map((r) => ({
    nodeId: r.node_id,
    model: r.model,
    sizeBytes: r.size_bytes,
    decodeTps: r.decode_tps,
    decodeSamples: r.decode_samples,
    prefillTps: r.prefill_tps,
    prefillSamples: r.prefill_samples,
    loadMs: r.load_ms,
    loadSamples: r.load_samples,
    updatedAt: r.updated_at,
  }));
}

/** Writes the rows in one transaction; a store that refuses them is logged (they are learned again), not thrown. */
export function writeSpeeds(db: Database, rows: SpeedRow[]): void {
  if (!rows.length) return;
  try {
    const upsert = db.prepare(`INSERT OR REPLACE INTO node_speeds (node_id, model, size_bytes, decode_tps, decode_samples, prefill_tps,
      prefill_samples, load_ms, load_samples, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    db.transaction(() => {
      for (const r of rows) upsert.run(r.nodeId, r.model, r.sizeBytes, r.decodeTps, r.decodeSamples, r.prefillTps, r.prefillSamples, r.loadMs, r.loadSamples, r.updatedAt);
    })();
  } catch (e) {
    log.warn(`learned speeds not saved (${(e as Error).message}); they are learned again from the next answers`);
  }
}
