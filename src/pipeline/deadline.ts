// A request's whole time, admission to last byte: timeouts.generationMs for a chat or generate,
// timeouts.embeddingMs for an embedding. Once it runs out, a request still waiting for a node ends
// with a 504 and one streaming ends with an error in its format; either way its slot is freed.
// herd's stop past its grace ends a request the same way, with its own reason. Until the answer is
// being relayed, a client that leaves ends it too: one signal for every wait of a request, not one
// per wait (each an AbortController and two listeners).
import type { Config } from "../config/schema.ts";
import type { RequestKind } from "../core/request.ts";
import { RouteError } from "../errors.ts";

export interface Deadline {
  /** Aborted, with the reason the client reads, when the request must end. */
  signal: AbortSignal;
  /** The answer is being relayed, which follows the client by its stream's cancel: the client no longer aborts the signal. */
  relaying(): void;
  /** The request is over: its timer and its listeners go. */
  release(): void;
}

export function deadline(config: Config, kind: RequestKind, shutdown: AbortSignal, client: AbortSignal): Deadline {
  const [ms, key] = kind === "embed" ? [config.timeouts.embeddingMs, "embeddingMs"] : [config.timeouts.generationMs, "generationMs"];
  const controller = new AbortController();
  const gone = shutdown.aborted ? shutdown : client.aborted ? client : null;
  if (gone) {
    controller.abort(gone.reason);
    return { signal: controller.signal, relaying: () => {}, release: () => {} };
  }
  const live = runningUntil(shutdown);
  live.add(controller);
  const onLeft = () => controller.abort(client.reason);
  client.addEventListener("abort", onLeft, { once: true });
  // 0: no deadline of herd's own.
  const timer = ms > 0 ? setTimeout(() => controller.abort(new RouteError(504, `the request ran past its deadline of ${ms} ms (timeouts.${key})`)), ms) : undefined;
  const relaying = () => client.removeEventListener("abort", onLeft);
  return {
    signal: controller.signal,
    relaying,
    release() {
      clearTimeout(timer);
      relaying();
      live.delete(controller);
    },
  };
}

const running = new WeakMap<AbortSignal, Set<AbortController>>();

/** The requests a stop ends: one listener on the stop for all of them, not one each. */
function runningUntil(shutdown: AbortSignal): Set<AbortController> {
  let live = running.get(shutdown);
  if (!live) {
    const requests = (live = new Set<AbortController>());
    running.set(shutdown, requests);
    shutdown.addEventListener("abort", () => {
      for (const request of requests) request.abort(shutdown.reason);
      requests.clear();
    }, { once: true });
  }
  return live;
}
