// Plays a workload against a router open loop: every request leaves at its own
// time whether or not earlier ones have finished, as independent clients would.
import type { Job } from "./workload.ts";

/** Longest a request may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 90_000;

export interface Outcome {
  job: Job;
  ok: boolean;
  /** The node herd says served it (X-Fleet-Node). */
  node: string | null;
  /** Request sent → last byte. */
  latencyMs: number;
  /** Request sent → first body byte: the first token of a stream. */
  firstTokenMs: number;
}

export async function replay(url: string, jobs: readonly Job[]): Promise<Outcome[]> {
  const t0 = performance.now();
  return Promise.all(
    jobs.map(async (job) => {
      await Bun.sleep(Math.max(0, job.atMs - (performance.now() - t0)));
      return send(url, job);
    }),
  );
}

async function send(url: string, job: Job): Promise<Outcome> {
  const sent = performance.now();
  let firstTokenMs = NaN;
  try {
    const res = await fetch(new URL(job.path, url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...job.body, stream: job.stream }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of res.body!) {
      if (Number.isNaN(firstTokenMs)) firstTokenMs = performance.now() - sent;
      text += decoder.decode(chunk, { stream: true });
    }
    // A stream that failed after its first byte ends with an error line.
    const last = text.trim().split("\n").at(-1) ?? "";
    const ok = res.status === 200 && !(JSON.parse(last) as { error?: string }).error;
    return { job, ok, node: res.headers.get("x-fleet-node"), latencyMs: performance.now() - sent, firstTokenMs };
  } catch {
    return { job, ok: false, node: null, latencyMs: performance.now() - sent, firstTokenMs };
  }
}
