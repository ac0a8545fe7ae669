// Reads a streamed body as lines (NDJSON, or SSE's `data:` lines), with an
// idle timeout between chunks so a backend that goes silent cannot hang a client.
export class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`no data from the node for ${ms} ms`);
  }
}

export async function* readLines(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> }, idleMs: number): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let timer: Timer | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new IdleTimeout(idleMs)), idleMs);
    });
    const { done, value } = await Promise.race([reader.read(), idle]).finally(() => clearTimeout(timer));
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
