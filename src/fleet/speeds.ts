// How fast each node really is, learned from its own answers: per node:model the decode rate,
// the prefill rate and the load time, each a decaying average that follows a change within a
// few requests (and faster after a quiet spell: an average's weight halves each hour since its
// last sample); and per node a speed factor that predicts a model it has not run yet from the
// model's size. Decoding reads every weight once per token, so decode rate × model bytes is
// about the node's effective memory bandwidth, the same for every model it runs; prefill and
// loading scale with the model's size the same way. A node's answers are its word: the caller
// holds their durations to herd's own clock first (claimed-times.ts), and no rate is believed past
// what any Mac does. What the store kept is bounded the same way when read back, and is a first
// guess: the first answer after a restart replaces it. Pure: no I/O, no clock of its own.
import type { Usage } from "../core/events.ts";
import type { SpeedRow } from "../store/speeds.ts";
import { MLX_PREFIX } from "./catalog.ts";
import { normalizeModelName } from "./model-name.ts";

/**
 * Where a figure comes from: "learned" from this node:model's own answers, "predicted" from the node's speed
 * factor (what it learned running other models, scaled by size), "prior" from what the node's hardware
 * promises, the rest of the fleet, or a default.
 */
export type SpeedSource = "learned" | "predicted" | "prior";

export interface SpeedPrediction {
  /** Output tokens per second. */
  decodeTps: number;
  /** Prompt tokens per second (of the part the node does not hold cached). */
  prefillTps: number;
  /** A load of the model from disk, in ms, were it not resident. */
  loadMs: number;
  /** The decode rate's source: the figure that weighs most in a finish time. */
  source: SpeedSource;
  sources: { decode: SpeedSource; prefill: SpeedSource; load: SpeedSource };
  /** The decode rate was learned from this node:model's answers within STALE_MS: nothing to explore there. */
  fresh: boolean;
  /**
   * Where the node's prior was held below the rest of the fleet's factors (a node of unknown bandwidth is taken to be
   * no faster than a Pro-class Mac), its decode and prefill at the fleet's: what exploring it may find. Absent otherwise.
   */
  atBest?: { decodeTps: number; prefillTps: number };
}

/** A node's speed factors, in bytes of model per second: decode (≈ effective memory bandwidth), prefill and load. */
export interface NodeFactor {
  decodeBytesPerS: number;
  prefillBytesPerS: number;
  loadBytesPerS: number;
  sources: { decode: SpeedSource; prefill: SpeedSource; load: SpeedSource };
  /** The rest of the fleet's decode factor, where it is above the prior decodeBytesPerS holds the node to; else null. */
  hopedDecodeBytesPerS: number | null;
}

/** How far each new sample moves an average: after 3 requests at a new speed, 78% of the way there. */
export const ALPHA = 0.4;
/** An average's weight against a new sample halves with each this long since its last sample. */
export const HALF_LIFE_MS = 3_600_000;
/**
 * The fastest a node is believed to decode and to prefill, in tokens per second: some twenty times what the fastest
 * Apple silicon does on the smallest models (geerlingguy/ai-benchmarks#48: an M1 Ultra runs TinyLlama 1.1B Q4_K_M
 * at 243 t/s generating, 5588 t/s on a 512-token prompt). A faster rate is a node's lie or a clock's slip.
 */
export const MAX_DECODE_TPS = 5000;
export const MAX_PREFILL_TPS = 100_000;
/** A load longer than this, read back from the store, is no load herd waited for. */
export const MAX_LOAD_MS = 3_600_000;
/** Fewer tokens than this time the overhead, not the rate. */
export const MIN_TOKENS = 4;
/** A load_duration below this is Ollama finding the model already resident, not a load. */
export const REAL_LOAD_MS = 100;
/** Of its peak memory bandwidth, what decoding gets on Apple silicon (llama.cpp reaches 60–75%), until the fleet shows its own. */
export const DECODE_EFFICIENCY = 0.65;
/** Peak bandwidth assumed of a node nothing is known of: a Pro-class Mac. */
export const DEFAULT_BANDWIDTH_GBPS = 200;
/** Prefill runs this many times faster than decode when nothing better is known (compute- rather than bandwidth-bound). */
export const PREFILL_PER_DECODE = 10;
/** Reading weights from an SSD into memory, when nothing better is known. */
export const DEFAULT_LOAD_BYTES_PER_S = 2e9;
/** The size taken for a model whose size is unknown. */
export const DEFAULT_MODEL_BYTES = 5e9;
/**
 * A decode rate not confirmed this long is explored again (fleet/finish-time.ts): the node may be faster now (a model
 * beside it gone, an upgrade), and a node routing no longer sends the model to never shows it otherwise.
 */
export const STALE_MS = 15 * 60_000;

/** The three rates a row keeps, and the factor each gives: bytes of model per second. */
const RATES = {
  decode: (r: SpeedRow) => (r.decodeTps === null ? null : r.decodeTps * r.sizeBytes),
  prefill: (r: SpeedRow) => (r.prefillTps === null ? null : r.prefillTps * r.sizeBytes),
  load: (r: SpeedRow) => (r.loadMs === null || r.loadMs <= 0 ? null : r.sizeBytes / (r.loadMs / 1000)),
};
type Rate = keyof typeof RATES;
/** Per rate, the sum and count of factors: a mean, and the mean of the rest of the fleet by subtraction. */
type Tally = Record<Rate, { sum: number; n: number }>;
const emptyTally = (): Tally => ({ decode: { sum: 0, n: 0 }, prefill: { sum: 0, n: 0 }, load: { sum: 0, n: 0 } });

export class Speeds {
  /** node id → normalized model → row. */
  private readonly rows = new Map<string, Map<string, SpeedRow>>();
  private readonly changed = new Set<SpeedRow>();
  /** Normalized model → the reply length it usually produces (tokens, a decaying average): the finish time's expected decode. */
  private readonly replies = new Map<string, number>();
  /** The factors tallied per node and fleet-wide, rebuilt after a change: a prediction (per candidate, per request) reads them. */
  private tallies: { nodes: Map<string, Tally>; fleet: Tally } | null = null;
  /** The rates of rows read back from the store that no answer since has confirmed: the next sample replaces each. */
  private readonly stored = new WeakMap<SpeedRow, Set<Rate>>();

  /**
   * `bandwidthGbps`: the peak memory bandwidth a node's agent reports or its config declares (null: unknown), the
   * prior of its decode factor. `rows`: what the store kept.
   */
  constructor(
    private readonly bandwidthGbps: (nodeId: string) => number | null = () => null,
    rows: readonly SpeedRow[] = [],
    now = Date.now(),
  ) {
    for (const r of rows) {
      const row = plausible(r, now);
      if (!row) continue;
      this.ofNode(row.nodeId).set(row.model, row);
      this.stored.set(row, new Set(Object.keys(RATES) as Rate[]));
    }
  }

  /**
   * Learns from one answer's usage (or a load's: a usage with only loadNs). Samples too small to mean anything are
   * skipped. `sizeBytes`: the model's size on the node (0: unknown), kept to scale the node's factor.
   */
  observe(nodeId: string, model: string, usage: Omit<Usage, "type">, sizeBytes = 0, now = Date.now()): void {
    const decode = rate(usage.completionTokens, usage.evalNs, MAX_DECODE_TPS);
    const prefill = rate(usage.promptTokens, usage.promptNs, MAX_PREFILL_TPS);
    const loadMs = usage.loadNs !== undefined && usage.loadNs / 1e6 >= REAL_LOAD_MS ? usage.loadNs / 1e6 : null;
    const name = nameOf(model);
    // No more tokens than the fastest decode makes in the time it took.
    const reply = Math.min(usage.completionTokens ?? 0, usage.evalNs === undefined ? Infinity : Math.ceil((MAX_DECODE_TPS * usage.evalNs) / 1e9));
    if (reply) this.replies.set(name, ewma(this.replies.get(name) ?? null, reply));
    if (decode === null && prefill === null && loadMs === null) return;
    const models = this.ofNode(nodeId);
    let row = models.get(name);
    if (!row) {
      row = { nodeId, model: name, sizeBytes: 0, decodeTps: null, decodeSamples: 0, prefillTps: null, prefillSamples: 0, loadMs: null, loadSamples: 0, updatedAt: now };
      models.set(name, row);
    }
    if (sizeBytes > 0) row.sizeBytes = sizeBytes;
    const ageMs = now - row.updatedAt;
    // The figure so far, or none where it is the store's and this is the first sample since.
    const stored = this.stored.get(row);
    const before = (r: Rate, value: number | null) => (stored?.delete(r) ? null : value);
    if (decode !== null) [row.decodeTps, row.decodeSamples] = [ewma(before("decode", row.decodeTps), decode, ageMs), row.decodeSamples + 1];
    if (prefill !== null) [row.prefillTps, row.prefillSamples] = [ewma(before("prefill", row.prefillTps), prefill, ageMs), row.prefillSamples + 1];
    if (loadMs !== null) [row.loadMs, row.loadSamples] = [ewma(before("load", row.loadMs), loadMs, ageMs), row.loadSamples + 1];
    row.updatedAt = now;
    this.changed.add(row);
    this.tallies = null;
  }

  /** What `model` (of `sizeBytes`; 0: unknown) will do on the node: its own learned rates, else the node's factor × size. */
  predict(nodeId: string, model: string, sizeBytes: number, now = Date.now()): SpeedPrediction {
    const row = this.rows.get(nodeId)?.get(nameOf(model));
    const fresh = row !== undefined && row.decodeTps !== null && now - row.updatedAt < STALE_MS;
    // Every figure learned: the node's factor (a pass over the fleet's tallies) is not needed. Routing asks this of every candidate.
    if (row && row.decodeTps !== null && row.prefillTps !== null && row.loadMs !== null) {
      return { decodeTps: row.decodeTps, prefillTps: row.prefillTps, loadMs: row.loadMs, source: "learned", sources: ALL_LEARNED, fresh };
    }
    const bytes = sizeBytes > 0 ? sizeBytes : row?.sizeBytes || DEFAULT_MODEL_BYTES;
    const factor = this.factor(nodeId);
    const [decodeTps, prefillTps, loadMs] = [row?.decodeTps ?? null, row?.prefillTps ?? null, row?.loadMs ?? null];
    const sources = {
      decode: decodeTps === null ? factor.sources.decode : ("learned" as const),
      prefill: prefillTps === null ? factor.sources.prefill : ("learned" as const),
      load: loadMs === null ? factor.sources.load : ("learned" as const),
    };
    const predicted = {
      decodeTps: decodeTps ?? factor.decodeBytesPerS / bytes,
      prefillTps: prefillTps ?? factor.prefillBytesPerS / bytes,
      loadMs: loadMs ?? (bytes / factor.loadBytesPerS) * 1000,
      source: sources.decode,
      sources,
      fresh,
    };
    const hoped = decodeTps === null ? factor.hopedDecodeBytesPerS : null;
    if (hoped === null) return predicted;
    const scale = hoped / factor.decodeBytesPerS;
    const atBest = { decodeTps: predicted.decodeTps * scale, prefillTps: sources.prefill === "prior" ? predicted.prefillTps * scale : predicted.prefillTps };
    return { ...predicted, atBest };
  }

  /** How many tokens `model` usually answers with, on any node; null before its first answer. */
  typicalReply(model: string): number | null {
    return this.replies.get(nameOf(model)) ?? null;
  }

  /** The node's speed factors: learned from the models it ran (of known size), else priors. */
  factor(nodeId: string): NodeFactor {
    const tallies = this.tallied();
    const mine = tallies.nodes.get(nodeId) ?? emptyTally();
    const own = (r: Rate) => (mine[r].n ? mine[r].sum / mine[r].n : null);
    const fleet = (r: Rate) => {
      const n = tallies.fleet[r].n - mine[r].n;
      return n ? (tallies.fleet[r].sum - mine[r].sum) / n : null;
    };
    const learnedDecode = own("decode");
    const bandwidth = this.bandwidthGbps(nodeId);
    const efficiency = this.efficiency(tallies.nodes);
    // A node of unknown bandwidth is taken as the fleet's average, but never faster than a Pro-class Mac: taken too
    // fast, a base chip keeps a request tens of seconds; too slow, a faster one serves less until herd explores it,
    // which hopes for the fleet's average (SpeedPrediction.atBest).
    const average = fleet("decode");
    const cap = DEFAULT_BANDWIDTH_GBPS * 1e9 * efficiency;
    const decodeBytesPerS = learnedDecode ?? (bandwidth ? bandwidth * 1e9 * efficiency : Math.min(average ?? Infinity, cap));
    // Prefill follows the node's decode speed by the ratio the fleet shows between the two.
    const fleetRatio = ratio(fleet("prefill"), average);
    const learnedPrefill = own("prefill");
    const learnedLoad = own("load");
    return {
      decodeBytesPerS,
      prefillBytesPerS: learnedPrefill ?? decodeBytesPerS * (fleetRatio ?? PREFILL_PER_DECODE),
      loadBytesPerS: learnedLoad ?? fleet("load") ?? DEFAULT_LOAD_BYTES_PER_S,
      sources: { decode: learnedDecode === null ? "prior" : "predicted", prefill: learnedPrefill === null ? "prior" : "predicted", load: learnedLoad === null ? "prior" : "predicted" },
      hopedDecodeBytesPerS: learnedDecode === null && !bandwidth && average !== null && average > cap ? average : null,
    };
  }

  /** The share of its peak bandwidth decoding gets, as the nodes whose bandwidth is known show it; else DECODE_EFFICIENCY. */
  private efficiency(nodes: Map<string, Tally>): number {
    let [sum, n] = [0, 0];
    for (const [id, t] of nodes) {
      const bandwidth = t.decode.n ? this.bandwidthGbps(id) : null;
      if (bandwidth) [sum, n] = [sum + t.decode.sum / t.decode.n / (bandwidth * 1e9), n + 1];
    }
    return n ? sum / n : DECODE_EFFICIENCY;
  }

  /** What was learned on the node, per model. */
  learned(nodeId: string): readonly SpeedRow[] {
    return [...(this.rows.get(nodeId)?.values() ?? [])];
  }

  /** The rows changed since the last call (copies), for the store. */
  takeChanged(): SpeedRow[] {
    const rows = [...this.changed].map((r) => ({ ...r }));
    this.changed.clear();
    return rows;
  }

  private ofNode(nodeId: string): Map<string, SpeedRow> {
    let models = this.rows.get(nodeId);
    if (!models) this.rows.set(nodeId, (models = new Map()));
    return models;
  }

  /** Each node's factors (one per model of known size and rate), summed per node and fleet-wide. */
  private tallied(): { nodes: Map<string, Tally>; fleet: Tally } {
    if (this.tallies) return this.tallies;
    const nodes = new Map<string, Tally>();
    const fleet = emptyTally();
    for (const [nodeId, models] of this.rows) {
      const tally = emptyTally();
      for (const row of models.values()) {
        if (row.sizeBytes <= 0) continue;
        for (const r of Object.keys(RATES) as Rate[]) {
          const f = RATES[r](row);
          if (f === null) continue;
          for (const t of [tally[r], fleet[r]]) [t.sum, t.n] = [t.sum + f, t.n + 1];
        }
      }
      nodes.set(nodeId, tally);
    }
    return (this.tallies = { nodes, fleet });
  }
}

/** The one name a model's rates are kept under: Ollama's rule for Ollama's models; an MLX model's repo id has no tag. */
const ALL_LEARNED: SpeedPrediction["sources"] = Object.freeze({ decode: "learned", prefill: "learned", load: "learned" });

export function nameOf(model: string): string {
  return model.startsWith(MLX_PREFIX) ? model : normalizeModelName(model);
}

/** Tokens per second, when there are enough tokens and a duration to tell; never past `max`. */
function rate(tokens: number | undefined, ns: number | undefined, max: number): number | null {
  return tokens !== undefined && tokens >= MIN_TOKENS && ns !== undefined && ns > 0 ? Math.min(max, tokens / (ns / 1e9)) : null;
}

/**
 * The decaying average: `sample` moves it ALPHA of the way from `previous` (null: none yet), and further the older
 * `previous` is (`ageMs` since its last sample): its weight halves each HALF_LIFE_MS.
 */
export function ewma(previous: number | null, sample: number, ageMs = 0): number {
  if (previous === null) return sample;
  const keep = (1 - ALPHA) * 0.5 ** (Math.max(0, ageMs) / HALF_LIFE_MS);
  return previous * keep + sample * (1 - keep);
}

/**
 * A row as the store gave it back, bounded as an answer's figures are: a rate past what any Mac does, or not a
 * positive number, is dropped (the node is learned again); null when the row names no node or model.
 */
function plausible(r: SpeedRow, now: number): SpeedRow | null {
  if (typeof r.nodeId !== "string" || !r.nodeId || typeof r.model !== "string" || !r.model) return null;
  const within = (v: unknown, min: number, max: number) => (typeof v === "number" && v >= min && v <= max ? v : null);
  const rateOf = (v: unknown, max: number) => (typeof v === "number" && v > 0 && v <= max ? v : null);
  // A figure kept is at least one sample's; one dropped is none.
  const samples = (v: unknown, figure: number | null) => (figure === null ? 0 : Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : 1);
  const decodeTps = rateOf(r.decodeTps, MAX_DECODE_TPS);
  const prefillTps = rateOf(r.prefillTps, MAX_PREFILL_TPS);
  const loadMs = within(r.loadMs, REAL_LOAD_MS, MAX_LOAD_MS);
  return {
    nodeId: r.nodeId,
    model: r.model,
    sizeBytes: within(r.sizeBytes, 0, Number.MAX_SAFE_INTEGER) ?? 0,
    decodeTps,
    decodeSamples: samples(r.decodeSamples, decodeTps),
    prefillTps,
    prefillSamples: samples(r.prefillSamples, prefillTps),
    loadMs,
    loadSamples: samples(r.loadSamples, loadMs),
    updatedAt: Math.min(now, within(r.updatedAt, 0, Number.MAX_SAFE_INTEGER) ?? now),
  };
}

function ratio(a: number | null, b: number | null): number | null {
  return a !== null && b ? a / b : null;
}
