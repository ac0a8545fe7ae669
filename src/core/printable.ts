// Text from outside (a node's report, a value a request or a config sent) that herd logs, shows or echoes in an
// error, kept to printable characters on one line. A control character (CR/LF, ESC and its CSI sequences) would
// forge a log line or drive the reader's terminal; a line separator or a bidi override does the same in a viewer
// that honours them.

/** Controls (Cc: C0, DEL, C1), format characters (Cf: bidi overrides, zero-width ones), line and paragraph separators. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const UNPRINTABLE_RUNS = /[\p{Cc}\p{Cf}\u2028\u2029]+/gu;

/** `text` as herd shows it: each run of unprintable characters one space. */
export function oneLine(text: string): string {
  return text.replace(UNPRINTABLE_RUNS, " ");
}

/** `text` as an error echoes it: at most `max` characters, each unprintable one as its \uXXXX escape, so the sender sees what it sent. */
export function echoed(text: string, max = 60): string {
  const short = text.length > max ? `${text.slice(0, max)}…` : text;
  return short.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `text` as herd keeps and shows it: well-formed, on one line (oneLine), at most `max` characters (then "…"), never cut inside a character. */
export function shortLine(text: string, max: number): string {
  const line = oneLine(text.toWellFormed());
  if (line.length <= max) return line;
  const high = line.charCodeAt(max - 1);
  return `${line.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max)}…`;
}
