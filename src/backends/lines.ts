// Reads a streamed body as lines (NDJSON, or SSE's `data:` lines). A node must make progress: a whole
// line at least every idleMs (bytes dripped one at a time, or blank lines, are no progress), and no
// line longer than its cap, so a node cannot hang a client or grow herd's memory without end.
import type { Config } from "../config/schema.ts";

class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`no whole line from the node for ${ms} ms`);
  }
}

/** The node sent more than the cap without ending its line. */
class LineTooLong extends Error {
  constructor(max: number) {
    super(`the node sent a line of more than ${max} bytes (server.maxNodeLineMb)`);
  }
}

/** The stream ended inside a line: the node (or something between) cut it short. */
class StreamCut extends Error {
  constructor(bytes: number) {
    super(`the node closed the stream mid-line (${bytes} bytes after the last whole line)`);
  }
}

type Reader = { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };

/** How long a node may take for each line, and how long a line may be. */
export interface LineLimits {
  idleMs: number;
  maxLineBytes: number;
}

/** The limits the config sets for a node's stream. */
export function lineLimits(config: Config): LineLimits {
  return { idleMs: config.timeouts.idleMs, maxLineBytes: Math.round(config.server.maxNodeLineMb * 2 ** 20) };
}

export async function* readLines(reader: Reader, limits: LineLimits): AsyncGenerator<string> {
  for await (const batch of readLineBatches(reader, limits)) yield* batch;
}

const utf8 = new TextDecoder();

/** The same lines, a batch per read: the whole lines that arrived together, so a relay can pass them on in one write. */
export async function* readLineBatches(reader: Reader, { idleMs, maxLineBytes }: LineLimits): AsyncGenerator<string[]> {
  // The bytes of the line not yet ended, as they came: only new bytes are searched for a newline,
  // so a long line costs its length once, not once per chunk.
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  // A read that waits too long is ended by cancelling the reader (its read then resolves as done):
  // a plain timer per read, not a promise race, as this runs for every chunk of every answer.
  let idle = false;
  const onIdle = () => {
    idle = true;
    void reader.cancel();
  };
  let lineDue = performance.now() + idleMs;
  for (;;) {
    const timer = setTimeout(onIdle, Math.max(0, lineDue - performance.now()));
    let chunk: { done: boolean; value?: Uint8Array };
    try {
      chunk = await reader.read();
    } finally {
      clearTimeout(timer); // a failed read (a cancelled call) too: a timer left behind holds a stopping process for idleMs
    }
    const { done, value } = chunk;
    if (idle) throw new IdleTimeout(idleMs);
    if (done || !value) break;
    const nl = value.lastIndexOf(10);
    if (heldBytes + (nl < 0 ? value.length : value.indexOf(10)) > maxLineBytes) throw new LineTooLong(maxLineBytes);
    if (nl < 0) {
      heldBytes += value.length;
      held.push(value.slice()); // the reader may reuse its buffer
      continue;
    }
    // A newline is one byte in UTF-8, never inside a character: the bytes up to it decode whole.
    const ended = held.length ? Buffer.concat([...held, value.subarray(0, nl)]) : value.subarray(0, nl);
    held = nl + 1 < value.length ? [value.slice(nl + 1)] : [];
    heldBytes = value.length - nl - 1;
    if (heldBytes > maxLineBytes) throw new LineTooLong(maxLineBytes);
    const whole = utf8.decode(ended).split("\n").filter((line) => line.trim());
    if (!whole.length) continue;
    yield whole;
    // Counted from when herd asks for more: a client slow to take the lines is not the node's delay.
    lineDue = performance.now() + idleMs;
  }
  // Streamed lines end with a newline; an unended rest is a line only when it is whole JSON (an error
  // body written without one). Anything else is a stream cut mid-line, which parsing would misname.
  const rest = utf8.decode(Buffer.concat(held));
  if (!rest.trim()) return;
  if (!isJson(rest)) throw new StreamCut(heldBytes);
  yield [rest];
}

export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
