// The closed-loop load the overhead and HTTP-client tables share: one small
// /api/generate, streamed and not, at 1, 50 and 200 concurrent clients, sent to
// each target in turn (never two at once, so they do not share the CPU), in
// rounds: a burst of other work on a shared machine then skews one round of
// one target, not the comparison.
import { cpuSeconds } from "./herd-process.ts";
import { type LoadResult, type LoadSpec, runLoad } from "./loadgen.ts";
import { percentile, sorted } from "./stats.ts";

export const MODEL = "llama3.2:3b";
export const TOKENS = 8;
const CONCURRENCY = [1, 50, 200];
/** Enough requests for a stable p99 at each level, bounded in time so the whole bench stays short. */
const REQUESTS: Record<number, number> = { 1: 3000, 50: 10_000, 200: 12_000 };
const MAX_MS = 6000;
/** Each cell runs the targets in turn this many times; each target's figures are those of its median round (by req/s). */
export const ROUNDS = 3;
/**
 * Requests of each kind every target serves before anything is measured. A router runs for days, and JavaScriptCore
 * keeps compiling hot code for its first tens of thousands of requests: measured in herd, its compiler threads took
 * 32 µs per request after 3,500 requests and 1 µs after 30,000.
 */
export const WARM_UP = 15_000;

export interface Target {
  url: string;
  client: LoadSpec["client"];
  /** The process that serves it, when the bench started it: its CPU time per request is then counted. */
  pid?: number;
}

export interface Summary {
  p50: number;
  p99: number;
  firstByteP50: number;
  rps: number;
  errors: number;
  /** CPU time (user + system, all threads) the target's process spent per answered request, in µs; null when it is not ours. */
  cpuUsPerRequest: number | null;
  /** The same, of its main thread alone (the event loop, where every request waits its turn). */
  mainCpuUsPerRequest: number | null;
}

export interface Cell<K extends string> {
  stream: boolean;
  clients: number;
  by: Record<K, Summary>;
}

export async function loadMatrix<K extends string>(targets: Record<K, Target>): Promise<Cell<K>[]> {
  const cells: Cell<K>[] = [];
  for (const t of Object.values(targets) as Target[]) {
    for (const stream of [false, true]) await runLoad({ url: t.url, client: t.client, path: "/api/generate", body: bodyOf(stream), clients: 50, requests: WARM_UP, warmup: 0, maxMs: 20_000 });
  }
  for (const stream of [false, true]) {
    const body = bodyOf(stream);
    for (const clients of CONCURRENCY) {
      const rounds = new Map<K, Summary[]>();
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, t] of Object.entries(targets) as [K, Target][]) {
          const spec = { url: t.url, client: t.client, path: "/api/generate", body, clients, requests: Math.ceil(REQUESTS[clients]! / ROUNDS), warmup: Math.max(100, clients * 2), maxMs: MAX_MS / ROUNDS };
          const cpu = t.pid === undefined ? null : [cpuSeconds(t.pid), cpuSeconds(t.pid, true)];
          const result = await runLoad(spec);
          const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(1, result.latencyMs.length);
          const [cpuUsPerRequest, mainCpuUsPerRequest] = cpu === null ? [null, null] : [perRequest(cpuSeconds(t.pid!) - cpu[0]!), perRequest(cpuSeconds(t.pid!, true) - cpu[1]!)];
          rounds.set(name, [...(rounds.get(name) ?? []), { ...summarize(result), cpuUsPerRequest, mainCpuUsPerRequest }]);
        }
      }
      const by = {} as Record<K, Summary>;
      for (const [name, summaries] of rounds) {
        const median = [...summaries].sort((a, b) => a.rps - b.rps)[Math.floor(ROUNDS / 2)]!;
        by[name] = { ...median, errors: summaries.reduce((n, s) => n + s.errors, 0) }; // errors of every round count
      }
      cells.push({ stream, clients, by });
    }
  }
  return cells;
}

function bodyOf(stream: boolean): string {
  return JSON.stringify({ model: MODEL, prompt: "hi", stream, options: { num_predict: TOKENS } });
}

function summarize(r: LoadResult): Omit<Summary, "cpuUsPerRequest" | "mainCpuUsPerRequest"> {
  const latency = sorted(r.latencyMs);
  return { p50: percentile(latency, 0.5), p99: percentile(latency, 0.99), firstByteP50: percentile(sorted(r.firstByteMs), 0.5), rps: latency.length / r.seconds, errors: r.errors };
}

export const requestLabel = `\`/api/generate\`, ${MODEL}, num_predict ${TOKENS}`;
