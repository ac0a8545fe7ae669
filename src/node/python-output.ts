// What a Python program (mlx_lm.server) says about itself: the long options its
// argparse --help lists, and, from its stderr, why it failed (a traceback ends in
// the exception's line; the message may run on over more lines) and whether one of
// its threads died of an exception.

/** The long options (`--model`, …) an argparse --help lists in its option sections. */
export function argparseOptions(help: string): Set<string> {
  const options = new Set<string>();
  // An option's line: two spaces, its invocation ("--port PORT", "-m MODEL, --model MODEL"), then its help after 2+ spaces.
  // Python 3.14 colours help only on a terminal; the escapes are dropped anyway.
  for (const line of help.replace(/\x1b\[[0-9;]*m/g, "").split("\n")) {
    const invocation = /^ {2}(-\S.*?)(?: {2,}|$)/.exec(line)?.[1];
    for (const part of invocation?.split(", ") ?? []) {
      const option = /^--[A-Za-z0-9][\w-]*/.exec(part)?.[0];
      if (option) options.add(option);
    }
  }
  return options;
}

/** How long a reason taken from stderr may be. */
const MAX_REASON = 300;

/** Reads a Python program's stderr a line at a time. */
export class PythonStderr {
  /** A thread died of an exception: Python's threading.excepthook writes "Exception in thread NAME:" before its traceback. */
  threadDied = false;
  private exception = "";
  private last = "";
  private inTraceback = false;
  private framed = false;

  line(text: string): void {
    const line = text.trimEnd();
    if (!line) return;
    if (line.startsWith("Exception in thread ")) this.threadDied = true;
    if (line.startsWith("Traceback (most recent call last):")) {
      this.inTraceback = true;
      this.framed = false;
    } else if (this.inTraceback && /^\s/.test(line)) this.framed = true;
    else if (this.inTraceback && this.framed) {
      // The first line after the frames names the exception; a chained traceback's last one is the error itself.
      this.exception = line;
      this.inTraceback = false;
    }
    this.last = line.trim();
  }

  /** Why it failed: the last traceback's exception line, else the last line it wrote. */
  get reason(): string {
    return (this.exception || this.last).slice(0, MAX_REASON);
  }
}
