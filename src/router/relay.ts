// Relaying a node's answer to the client in the surface's wire format: its
// chunks of Events through tool-call repair, then the encoder; keep-alives
// while the node is silent; and an answer that always ends well-formed,
// whatever the node did, by its deadline, and with a client that stops reading cut off.
import { type AnswerCap, AnswerTooLarge } from "../core/capped-body.ts";
import type { Encoder } from "../core/encoder.ts";
import { RouteError } from "../errors.ts";
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
  /** Aborted when the request's deadline passes or herd's stop runs out of grace: the answer ends with its reason. */
  stop: AbortSignal,
  /** How long the client may leave what was sent unread (0: for ever). */
  clientReadMs: number,
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
    stop.removeEventListener("abort", cut);
    clearTimeout(stallTimer);
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
  // The deadline passed, or herd is stopping and the grace period is over: the answer ends here, with an error the client can read.
  const cut = () => {
    if (finished) return;
    routed.call.cancel();
    const message = (stop.reason as Error).message;
    end("incomplete", null, message, encoder.fail(message));
  };
  // A client that stops reading would hold the node's slot for as long as it likes: since when the
  // stream has waited for it to take what was sent (null while herd waits on the node), checked by
  // one timer per stream rather than one per chunk.
  let unreadSince: number | null = null;
  let stallTimer: Timer | undefined;
  const checkReading = () => {
    if (finished) return;
    const waited = unreadSince === null ? 0 : performance.now() - unreadSince;
    if (waited < clientReadMs) {
      stallTimer = setTimeout(checkReading, clientReadMs - waited);
      return;
    }
    const message = `the client did not read the answer for ${clientReadMs} ms (timeouts.clientReadMs): cut off`;
    controller?.error(new Error(message));
    drop(message);
  };
  // The client is gone, or cut off: nothing more is sent, and the node's call ends.
  const drop = (message: string) => {
    finished = true;
    stop.removeEventListener("abort", cut);
    clearTimeout(stallTimer);
    routed.call.cancel();
    finish("client_disconnected", null, message);
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
      if (clientReadMs > 0) stallTimer = setTimeout(checkReading, clientReadMs);
      if (stop.aborted) cut();
      else stop.addEventListener("abort", cut, { once: true });
    },
    // Reads on until the client gets something: a pull that enqueues nothing is not called again, and the stream would stall.
    async pull() {
      unreadSince = null;
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
      unreadSince = performance.now();
    },
    cancel() {
      if (!finished) drop("the client went away");
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

/**
 * A client that asked for one answer gets one answer or one error, never a body that breaks off: when the
 * node streams anyway (NDJSON for stream:false), the whole answer is read before anything is sent (up to `cap`, as a
 * whole answer is), and its chunks are put in `arrived` for the relay. Says why it did not end well, or null.
 */
export function gather(routed: Routed, kind: RequestKind, signal: AbortSignal, cap: AnswerCap): Promise<Gathered> | Gathered {
  const call = routed.call;
  const chunks = [call.first, ...(call.arrived ?? [])];
  const end = endAmong(chunks);
  // Most whole answers are: no read to wait for, so no turn of the event loop either.
  if (end || kind === "embed") return verdict(routed, kind, end);
  return gatherRest(routed, kind, chunks, signal, cap);
}

type Gathered = { status: number; message: string } | null;

async function gatherRest(routed: Routed, kind: RequestKind, chunks: Chunk[], signal: AbortSignal, cap: AnswerCap): Promise<Gathered> {
  const call = routed.call;
  let end: ReturnType<typeof endOf>;
  // The lines as the node sent them (an Ollama node's, the one backend that streams a whole answer), in characters.
  let size = 0;
  const stop = () => call.cancel();
  signal.addEventListener("abort", stop, { once: true });
  try {
    // Batch by batch, not a for-await: leaving that loop would close the node's body before its end.
    while (!end) {
      const next = await call.rest.next();
      if (next.done) break;
      chunks.push(...next.value);
      end = endAmong(next.value);
      for (const c of next.value) size += c.raw?.length ?? 0;
      if (size > cap.bytes) {
        call.cancel();
        return { status: 502, message: `${new AnswerTooLarge(cap).message} (streamed, to a client that asked for one answer)` };
      }
    }
  } catch (e) {
    if (!signal.aborted) return { status: 502, message: `node ${routed.nodeId} failed mid-answer: ${(e as Error).message}` };
  } finally {
    signal.removeEventListener("abort", stop);
  }
  if (signal.aborted) {
    const reason = signal.reason as Error;
    return { status: reason instanceof RouteError ? reason.status : 502, message: reason.message };
  }
  const failure = verdict(routed, kind, end);
  if (!failure) routed.call = { ...call, arrived: chunks.slice(1) };
  return failure;
}

/** The first end (done or error) among the chunks, if one has come. */
function endAmong(chunks: readonly Chunk[]): ReturnType<typeof endOf> {
  for (const c of chunks) {
    const end = endOf(c);
    if (end) return end;
  }
  return undefined;
}

/** Whether the answer ended well: null, or why not. */
function verdict(routed: Routed, kind: RequestKind, end: ReturnType<typeof endOf>): Gathered {
  if (end?.type === "error") return { status: 502, message: end.message };
  if (!end && kind !== "embed") return { status: 502, message: `node ${routed.nodeId} closed the stream before it finished` };
  return null;
}
