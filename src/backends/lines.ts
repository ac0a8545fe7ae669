// Reads a streamed body as lines (NDJSON, or SSE's `data:` lines), with an
// idle timeout between chunks so a backend that goes silent cannot hang a client.
class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`no data from the node for ${ms} ms`);
  }
}

/** The stream ended inside a line: the node (or something between) cut it short. */
class StreamCut extends Error {
  constructor(bytes: number) {
    super(`the node closed the stream mid-line (${bytes} bytes after the last whole line)`);
  }
}

type Reader = { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };

export async function* readLines(reader: Reader, idleMs: number): AsyncGenerator<string> {
  for await (const batch of readLineBatches(reader, idleMs)) yield* batch;
}

/** The same lines, a batch per read: the whole lines that arrived together, so a relay can pass them on in one write. */
export async function* readLineBatches(reader: Reader, idleMs: number): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  let buffer = "";
  // A read that waits too long is ended by cancelling the reader (its read then resolves as done):
  // a plain timer per read, not a promise race, as this runs for every chunk of every answer.
  let idle = false;
  const onIdle = () => {
    idle = true;
    void reader.cancel();
  };
  for (;;) {
    const timer = setTimeout(onIdle, idleMs);
    let chunk: { done: boolean; value?: Uint8Array };
    try {
      chunk = await reader.read();
    } finally {
      clearTimeout(timer); // a failed read (a cancelled call) too: a timer left behind holds a stopping process for idleMs
    }
    const { done, value } = chunk;
    if (idle) throw new IdleTimeout(idleMs);
    if (done || !value) break;
    buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split("\n");
    buffer = lines.pop()!;
    const whole = lines.filter((line) => line.trim());
    if (whole.length) yield whole;
  }
  // Streamed lines end with a newline; an unended rest is a line only when it is whole JSON (an error
  // body written without one). Anything else is a stream cut mid-line, which parsing would misname.
  buffer += decoder.decode();
  if (!buffer.trim()) return;
  if (!isJson(buffer)) throw new StreamCut(Buffer.byteLength(buffer));
  yield [buffer];
}

export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
