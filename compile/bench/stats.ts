// Summaries of latency samples, and the number formats the bench's tables use.

/** The value below which `p` (0..1) of the sorted samples fall (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function sorted(samples: readonly number[]): number[] {
  return [...samples].sort((a, b) => a - b);
}

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
