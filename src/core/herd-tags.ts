// The tags herd gives a request itself: key:<name> from the API key it came with (auth/caller.ts), and user:<id>
// from its user field or Claude Code's account id. The dashboard's per-key figures trust the first, and the
// platform's roll-up leaves both out (they say who, not what for), so a client's own tag must not pass for one of
// them: not in another case (KEY:), in compatibility forms (ｋｅｙ：), with marks or invisible characters, or in
// letters of another script drawn the same (Cyrillic кеу:, from Unicode's confusables.txt).

const HERD_PREFIXES = ["key:", "user:"] as const;
type HerdPrefix = (typeof HERD_PREFIXES)[number];

/** Characters drawn like the letters and the colon of herd's prefixes, and what they look like (confusables.txt). */
const LOOKALIKES: Record<string, string> = {
  // k
  "\u03ba": "k", "\u043a": "k", "\u0138": "k", "\u1d0b": "k", "\u2c95": "k", "\u049b": "k", "\u049d": "k", "\u04a1": "k",
  // e
  "\u0435": "e", "\u04bd": "e", "\u212e": "e", "\u0454": "e", "\u03b5": "e", "\u0451": "e", "\uab32": "e", "\u1d07": "e",
  // y
  "\u0443": "y", "\u04af": "y", "\u03b3": "y", "\u028f": "y", "\u1d8c": "y", "\u10e7": "y", "\u04b1": "y", "\u045e": "y",
  // u
  "\u03c5": "u", "\u0585": "u", "\u1d1c": "u", "\u028b": "u", "\uab4e": "u", "\ua79f": "u",
  // s
  "\u0455": "s", "\ua731": "s", "\u01bd": "s", "\u10bd": "s",
  // r
  "\u0433": "r", "\u1d26": "r", "\u2c85": "r", "\uab47": "r", "\uab48": "r", "\u0280": "r",
  // :
  "\u2236": ":", "\u02f8": ":", "\ua789": ":", "\u02d0": ":", "\u05c3": ":", "\u0703": ":", "\u0704": ":", "\u16ec": ":", "\u0589": ":", "\u1361": ":", "\u205a": ":",
};

/** What a character looks like to a reader: its compatibility form without marks or format characters, in lower case, other scripts' lookalikes as the Latin letter. */
function look(char: string): string {
  return [...char.normalize("NFKD").replace(/[\p{M}\p{Cf}]/gu, "").toLowerCase()].map((c) => LOOKALIKES[c] ?? c).join("");
}

/** The herd prefix `tag` starts with or passes for, and the rest of it; null when it passes for none. */
function herdPrefix(tag: string): { prefix: HerdPrefix; rest: string } | null {
  let seen = "";
  let at = 0;
  for (const char of tag) {
    seen += look(char);
    at += char.length;
    const prefix = HERD_PREFIXES.find((p) => p === seen);
    if (prefix) return { prefix, rest: tag.slice(at) };
    if (!HERD_PREFIXES.some((p) => p.startsWith(seen))) return null;
  }
  return null;
}

/**
 * A client's tag as herd keeps it: one that passes for key: is dropped (null), since only the key a request came with
 * gives one; one that passes for user: is a user tag, its prefix spelled as herd spells it; any other as it came.
 */
export function clientTag(tag: string): string | null {
  const herd = herdPrefix(tag);
  if (!herd) return tag;
  return herd.prefix === "key:" ? null : `user:${herd.rest}`;
}
