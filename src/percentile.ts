// Percentiles of measured values (latencies, token counts), one rule everywhere: nearest rank,
// so a percentile is always a value some request really had.

/** The value below which `p` (0..1) of the ascending `sorted` values fall; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}
