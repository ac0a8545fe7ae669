// Reads a streamed body as lines (NDJSON, or SSE's `data:` lines), with an
// idle timeout between chunks so a backend that goes silent cannot hang a client.
export class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`no data from the node for ${ms} ms`);
  }
}

export async function* readLines(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> }, idleMs: number): AsyncGenerator<string> {
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
    const { done, value } = await reader.read();
    clearTimeout(timer);
    if (idle) throw new IdleTimeout(idleMs);
    if (done || !value) break;
    buffer += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) yield line;
    }
  }
  buffer += decoder.decode();
  if (buffer.trim()) yield buffer;
}
