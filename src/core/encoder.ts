// The port every surface's answer writer fills: an answer's Events in, the
// surface's wire bytes out (an encoder per request, as ids and open blocks are
// the answer's own). The relay drives it; it knows nothing of nodes.
import type { Chunk } from "./events.ts";

/** How a surface writes the node's answer in its own wire format. */
export interface Encoder {
  contentType: string;
  /** Bytes for one chunk of the node's answer ("" to send nothing). */
  encode(chunk: Chunk): string;
  /** Bytes after the answer's `done` (e.g. SSE's `data: [DONE]`). */
  end(): string;
  /** Bytes that end a stream that failed after its first byte. */
  fail(message: string): string;
  /** A whole error response before anything was sent. */
  error(status: number, message: string, headers: Record<string, string>): Response;
  /** Bytes to send when the node has been silent this long (Anthropic's `ping`), so clients know the stream is alive. */
  keepAlive?: { everyMs: number; bytes: string };
}
