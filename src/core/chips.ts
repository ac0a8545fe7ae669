// Peak unified-memory bandwidth in GB/s, as Apple publishes it for each chip.
// Cut-down variants of some chips have less (M3 Max 14-core: 300, M4 Max 14-core: 410),
// but the brand string names them the same, so the full chip's figure stands for both.
const BANDWIDTH_GBPS = new Map<string, number>([
  ["M1", 68.25],
  ["M1 Pro", 200],
  ["M1 Max", 400],
  ["M1 Ultra", 800],
  ["M2", 100],
  ["M2 Pro", 200],
  ["M2 Max", 400],
  ["M2 Ultra", 800],
  ["M3", 100],
  ["M3 Pro", 150],
  ["M3 Max", 400],
  ["M3 Ultra", 819],
  ["M4", 120],
  ["M4 Pro", 273],
  ["M4 Max", 546],
  ["M5", 153],
  ["M5 Pro", 307],
  ["M5 Max", 614],
]);

/** The chips known by name, as a config may write them ("M2 Max"). */
export const CHIP_NAMES: readonly string[] = [...BANDWIDTH_GBPS.keys()];

/** Memory bandwidth for a `machdep.cpu.brand_string` such as "Apple M2 Max", or a config's "M2 Max"; 0 when the chip is unknown. */
export function bandwidthForChip(chip: string): number {
  const name = /^(?:Apple )?(M\d+(?: (?:Pro|Max|Ultra))?)\b/.exec(chip.trim())?.[1];
  return (name && BANDWIDTH_GBPS.get(name)) || 0;
}
