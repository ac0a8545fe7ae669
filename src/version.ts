import pkg from "../package.json" with { type: "json" };

/** herd's own version: `herd version`, and the X-Herd-Version header of every answer. */
export const VERSION: string = pkg.version;

/** The lowest of these versions, compared part by part as numbers (0.13.4 < 0.13.10); null and unparsable ones are ignored. */
export function lowestVersion(versions: readonly (string | null)[]): string | null {
  let lowest: { text: string; parsed: Parsed } | null = null;
  for (const text of versions) {
    if (text === null) continue;
    const parsed = parseVersion(text);
    if (parsed && (!lowest || compare(parsed, lowest.parsed) < 0)) lowest = { text, parsed };
  }
  return lowest?.text ?? null;
}

interface Parsed {
  parts: number[];
  /** "0.14.0-rc1": a pre-release comes before its release. */
  pre: boolean;
}

function parseVersion(text: string): Parsed | null {
  const m = /^v?(\d+(?:\.\d+)*)(-)?/.exec(text.trim());
  return m ? { parts: m[1]!.split(".").map(Number), pre: m[2] !== undefined } : null;
}

function compare(a: Parsed, b: Parsed): number {
  for (let i = 0; i < Math.max(a.parts.length, b.parts.length); i++) {
    const d = (a.parts[i] ?? 0) - (b.parts[i] ?? 0);
    if (d) return d;
  }
  return Number(b.pre) - Number(a.pre);
}
