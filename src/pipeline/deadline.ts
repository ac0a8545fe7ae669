// A request's whole time, admission to last byte: timeouts.generationMs for a chat or generate,
// timeouts.embeddingMs for an embedding. Once it runs out, a request still waiting for a node ends
// with a 504 and one streaming ends with an error in its format; either way its slot is freed.
// herd's stop past its grace ends a request the same way, with its own reason.
import type { Config } from "../config/schema.ts";
import type { RequestKind } from "../core/request.ts";
import { RouteError } from "../errors.ts";

export interface Deadline {
  /** Aborted, with the reason the client reads, when the request must end. */
  signal: AbortSignal;
  /** The request is over: its timer and its listener on the stop go. */
  release(): void;
}

export function deadline(config: Config, kind: RequestKind, shutdown: AbortSignal): Deadline {
  const [ms, key] = kind === "embed" ? [config.timeouts.embeddingMs, "embeddingMs"] : [config.timeouts.generationMs, "generationMs"];
  const controller = new AbortController();
  if (shutdown.aborted) {
    controller.abort(shutdown.reason);
    return { signal: controller.signal, release: () => {} };
  }
  const onStop = () => controller.abort(shutdown.reason);
  shutdown.addEventListener("abort", onStop, { once: true });
  // 0: no deadline of herd's own.
  const timer = ms > 0 ? setTimeout(() => controller.abort(new RouteError(504, `the request ran past its deadline of ${ms} ms (timeouts.${key})`)), ms) : undefined;
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      shutdown.removeEventListener("abort", onStop);
    },
  };
}
