// Relaying a node's answer to the client in the surface's wire format: its
// chunks of Events through tool-call repair, then the encoder; keep-alives
// while the node is silent; and an answer that always ends well-formed,
// whatever the node did.
import type { Encoder } from "../core/encoder.ts";
import { type Chunk, endOf } from "../core/events.ts";
import type { RequestKind } from "../core/request.ts";
import type { TraceStatus } from "../store/traces.ts";
import type { Routed } from "./routed.ts";
import type { ToolCallRepair } from "./tool-repair.ts";

/**
 * The node's answer, re-encoded; it always ends well-formed, whatever the node did. An answer that is
 * whole in its first chunk (stream:false, embeddings), or in the chunks that came in the same read as it
 * (a short answer from a fast node), comes back as one string: no stream to pump, one write to the client.
 */
export function relay(
  routed: Routed,
  kind: RequestKind,
  encoder: Encoder,
  repair: ToolCallRepair | null,
  finish: (s: TraceStatus, done: Chunk | null, e: string | null) => void,
  shutdown: AbortSignal,
): string | ReadableStream<Uint8Array> {
  let finished = false;
  let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  // Text for the client not sent yet: the chunks that arrived together go out in one write (and the first
  // chunk, encoded before the stream exists, waits here until it starts).
  let out = "";
  const send = (text: string) => {
    out += text;
  };
  const flush = () => {
    if (!controller || !out) return;
    controller.enqueue(utf8.encode(out));
    out = "";
  };
  const end = (status: TraceStatus, done: Chunk | null, error: string | null, tail: string) => {
    finished = true;
    shutdown.removeEventListener("abort", cut);
    if (tail) send(tail);
    flush();
    controller?.close();
    finish(status, done, error);
  };
  // A chunk ends the answer when it ends in `done` (embeddings come as one chunk without it).
  // Says whether the client got anything: a chunk may encode to nothing (text an encoder holds back).
  const handle = (chunk: Chunk): boolean => {
    const last = endOf(chunk);
    if (last?.type === "error") {
      end("failed", null, last.message, encoder.fail(last.message));
      return true;
    }
    const out = encoder.encode(chunk);
    if (out) send(out);
    if (last || kind === "embed") {
      end("completed", chunk, null, encoder.end());
      return true;
    }
    return out !== "";
  };
  // Chunks pass through tool-call repair first when the request offered tools; it may hold some back.
  const feed = (chunk: Chunk): boolean => {
    if (!repair) return !finished && handle(chunk);
    let sent = false;
    for (const c of repair.feed(chunk)) if (!finished) sent = handle(c) || sent;
    return sent;
  };
  // herd is stopping and the grace period is over: the answer ends here, with an error the client can read.
  const cut = () => {
    if (finished) return;
    routed.call.cancel();
    const message = (shutdown.reason as Error).message;
    end("incomplete", null, message, encoder.fail(message));
  };
  feed(routed.call.first);
  for (const chunk of routed.call.arrived ?? []) feed(chunk);
  if (finished) {
    // Read the node's body to its end, so its connection goes back to the pool instead of lingering.
    void routed.call.rest.next().catch(() => {});
    return out;
  }
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      flush();
      if (shutdown.aborted) cut();
      else shutdown.addEventListener("abort", cut, { once: true });
    },
    // Reads on until the client gets something: a pull that enqueues nothing is not called again, and the stream would stall.
    async pull() {
      let sent = false;
      while (!finished && !sent) {
        try {
          const next = await nextChunks(routed, encoder, (keepAlive) => {
            if (finished) return;
            send(keepAlive);
            flush();
            sent = true;
          });
          if (finished) return; // cut while waiting
          if (next.done) {
            const message = `node ${routed.nodeId} closed the stream before it finished`;
            return end("incomplete", null, message, encoder.fail(message));
          }
          for (const chunk of next.value) sent = feed(chunk) || sent;
          flush();
        } catch (e) {
          if (finished) return;
          const message = `node ${routed.nodeId} failed mid-stream: ${(e as Error).message}`;
          routed.call.cancel();
          end("failed", null, message, encoder.fail(message));
        }
      }
    },
    cancel() {
      if (finished) return;
      finished = true;
      shutdown.removeEventListener("abort", cut);
      routed.call.cancel();
      finish("client_disconnected", null, "the client went away");
    },
  });
}

const utf8 = new TextEncoder();

/** The node's next chunks; while waiting, the encoder's keep-alive bytes go out every interval. */
async function nextChunks(routed: Routed, encoder: Encoder, send: (bytes: string) => void): Promise<IteratorResult<Chunk[]>> {
  const next = routed.call.rest.next();
  const keepAlive = encoder.keepAlive;
  if (!keepAlive) return next;
  for (;;) {
    let timer: Timer | undefined;
    const tick = new Promise<"tick">((resolve) => {
      timer = setTimeout(() => resolve("tick"), keepAlive.everyMs);
    });
    const won = await Promise.race([next, tick]).finally(() => clearTimeout(timer));
    if (won !== "tick") return won;
    send(keepAlive.bytes);
  }
}
