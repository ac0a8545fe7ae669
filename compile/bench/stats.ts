// Summaries of latency samples, and the number formats the bench's tables use.

export { percentile, sorted } from "../../src/percentile.ts";

/** Milliseconds with the precision a table needs: hundredths below 10 ms, tenths below 1 s, whole above. */
export function ms(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const abs = Math.abs(n);
  return abs < 10 ? n.toFixed(2) : abs < 1000 ? n.toFixed(1) : n.toFixed(0);
}

export function pct(part: number, whole: number): string {
  return whole ? `${((100 * part) / whole).toFixed(0)}%` : "–";
}

/** Milliseconds as seconds, for latencies that are seconds long. */
export function secs(n: number): string {
  return Number.isFinite(n) ? (n / 1000).toFixed(2) : "–";
}
