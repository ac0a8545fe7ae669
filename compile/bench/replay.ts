// Plays a workload against a router open loop: every request leaves at its own
// time whether or not earlier ones have finished, as independent clients would.
// An agent session is the exception, as an agent is: each turn leaves once the
// last one's answer is in and the agent has worked on it, and resends the whole
// conversation with that answer and its next message.
import { type Job, nextTurn } from "./workload.ts";

/** Longest a request may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 90_000;

export interface Outcome {
  job: Job;
  /** An agent session's turn, from 0; 0 for every other request. */
  turn: number;
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
  const outcomes = await Promise.all(
    jobs.map(async (job) => {
      await Bun.sleep(Math.max(0, job.atMs - (performance.now() - t0)));
      return job.session ? session(url, job) : [(await send(url, job, job.body, 0)).outcome];
    }),
  );
  return outcomes.flat();
}

async function session(url: string, job: Job): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let messages = job.body.messages as unknown[];
  for (let turn = 0; ; turn++) {
    const { outcome, content } = await send(url, job, { ...job.body, messages }, turn);
    outcomes.push(outcome);
    const next = job.session!.next[turn];
    if (!outcome.ok || !next) return outcomes;
    await Bun.sleep(next.afterMs);
    messages = nextTurn(messages, content, next);
  }
}

async function send(url: string, job: Job, body: Record<string, unknown>, turn: number): Promise<{ outcome: Outcome; content: string }> {
  const sent = performance.now();
  let firstTokenMs = NaN;
  try {
    const res = await fetch(new URL(job.path, url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...body, stream: job.stream }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of res.body!) {
      if (Number.isNaN(firstTokenMs)) firstTokenMs = performance.now() - sent;
      text += decoder.decode(chunk, { stream: true });
    }
    const lines = text.trim().split("\n").map((l) => JSON.parse(l) as { error?: string; message?: { content?: string } });
    // A stream that failed after its first byte ends with an error line.
    const ok = res.status === 200 && !lines.at(-1)?.error;
    const content = lines.map((l) => l.message?.content ?? "").join("");
    return { outcome: { job, turn, ok, node: res.headers.get("x-fleet-node"), latencyMs: performance.now() - sent, firstTokenMs }, content };
  } catch {
    return { outcome: { job, turn, ok: false, node: null, latencyMs: performance.now() - sent, firstTokenMs }, content: "" };
  }
}
