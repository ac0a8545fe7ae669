// A signal aborted when either of two is, for as long as a request lasts.
// AbortSignal.any would do, but Bun (1.4) keeps every signal made from a
// long-lived one (the router's shutdown, a sim's stop) for as long as that one
// lives: about a kilobyte per request, never freed. Plain listeners, removed
// when the request is over, keep nothing.

export interface Linked {
  signal: AbortSignal;
  /** Stops following the two: call it once the request no longer needs the signal. */
  release(): void;
}

export function eitherSignal(a: AbortSignal, b: AbortSignal): Linked {
  const controller = new AbortController();
  const aborted = [a, b].find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, release: () => {} };
  }
  const onA = () => controller.abort(a.reason);
  const onB = () => controller.abort(b.reason);
  a.addEventListener("abort", onA, { once: true });
  b.addEventListener("abort", onB, { once: true });
  return {
    signal: controller.signal,
    release() {
      a.removeEventListener("abort", onA);
      b.removeEventListener("abort", onB);
    },
  };
}
