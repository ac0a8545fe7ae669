// A closed-loop load generator: N clients, each sending its next request as
// soon as the last one ended. It runs in its own Bun process (runLoad spawns
// this file), so on a 2-core machine it competes with the router for CPU like
// any other client would, but never for the router's event loop.
import { Pool } from "undici/index.js"; // the real package: Bun maps "undici" to a stub of its own
import { postJson } from "../../src/backends/http1.ts";

export interface LoadSpec {
  url: string;
  path: string;
  body: string;
  clients: number;
  /** Requests measured, after `warmup` unmeasured ones (which also open the connections). */
  requests: number;
  warmup: number;
  /** Stops early when the measured part takes longer than this. */
  maxMs: number;
  /** Duration-bound instead: the clients send requests for maxMs, whatever their number (`requests` is ignored). */
  untilMaxMs?: boolean;
  /** Text the end of every answer must contain (`"done":true`): one without it (an error line instead) is an error. */
  endsWith?: string;
  /** Which HTTP client sends the requests: Bun's fetch, undici's Pool, or herd's own (src/backends/http1.ts). */
  client: "fetch" | "undici" | "herd";
}

export interface LoadResult {
  /** Request sent → last byte of the body, one per completed request. */
  latencyMs: number[];
  /** Request sent → first byte of the body. */
  firstByteMs: number[];
  seconds: number;
  errors: number;
  /** The first few errors, as said. */
  errorSamples: string[];
}

type Send = () => Promise<{ status: number; chunks: AsyncIterable<unknown> }>;

function sender(spec: LoadSpec): { send: Send; close(): Promise<void> } {
  const headers = { "content-type": "application/json" };
  if (spec.client === "fetch") {
    const url = new URL(spec.path, spec.url);
    return {
      send: async () => {
        const res = await fetch(url, { method: "POST", headers, body: spec.body });
        return { status: res.status, chunks: res.body! };
      },
      close: async () => {},
    };
  }
  if (spec.client === "herd") {
    const url = new URL(spec.path, spec.url);
    const never = new AbortController().signal;
    return {
      send: async () => {
        const answer = await postJson(url, spec.body, never);
        return { status: answer.status, chunks: chunksOf(answer.body) };
      },
      close: async () => {},
    };
  }
  const pool = new Pool(new URL(spec.url).origin, { connections: spec.clients, pipelining: 1 });
  return {
    send: async () => {
      const res = await pool.request({ path: spec.path, method: "POST", headers, body: spec.body });
      return { status: res.statusCode, chunks: res.body };
    },
    close: () => pool.close(),
  };
}

async function* chunksOf(body: { read(): Promise<{ done: boolean; value?: Uint8Array }> }): AsyncGenerator<Uint8Array> {
  for (let r = await body.read(); !r.done; r = await body.read()) yield r.value!;
}

async function drive(send: Send, spec: LoadSpec, count: number, maxMs: number): Promise<LoadResult> {
  const result: LoadResult = { latencyMs: [], firstByteMs: [], seconds: 0, errors: 0, errorSamples: [] };
  const decoder = new TextDecoder();
  const started = performance.now();
  const deadline = started + maxMs;
  let issued = 0;
  const client = async () => {
    while (issued < count && performance.now() < deadline) {
      issued++;
      const t = performance.now();
      try {
        const { status, chunks } = await send();
        let first = 0;
        // The last two chunks: enough to find the end marker however the final line was split.
        let tail: [Uint8Array, Uint8Array] = [new Uint8Array(), new Uint8Array()];
        for await (const chunk of chunks as AsyncIterable<Uint8Array>) {
          first ||= performance.now();
          tail = [tail[1], chunk];
        }
        if (status !== 200) throw new Error(`HTTP ${status}`);
        if (spec.endsWith && !(decoder.decode(tail[0]) + decoder.decode(tail[1])).includes(spec.endsWith)) throw new Error(`no ${spec.endsWith} at the end: ${decoder.decode(tail[1]).slice(-200)}`);
        result.firstByteMs.push((first || performance.now()) - t);
        result.latencyMs.push(performance.now() - t);
      } catch (e) {
        result.errors++;
        if (result.errorSamples.length < 5) result.errorSamples.push((e as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: spec.clients }, client));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

/**
 * Bun's fetch sends at most 256 requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS says otherwise when the
 * process starts (setting it later does nothing): a process that must hold more streams open gets it this way.
 */
function fetchCapEnv(concurrent: number): Record<string, string> {
  return concurrent > 256 ? { BUN_CONFIG_MAX_HTTP_REQUESTS: String(Math.min(65_535, concurrent * 2)) } : {};
}

/** Runs the spec in a fresh Bun process and returns what it measured. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const env = { ...process.env, ...fetchCapEnv(spec.clients) };
  const proc = Bun.spawn([process.execPath, import.meta.path, JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit", env });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`load generator exited ${code}`);
  return JSON.parse(out) as LoadResult;
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2]!) as LoadSpec;
  const { send, close } = sender(spec);
  await drive(send, spec, spec.warmup, spec.maxMs);
  const result = await drive(send, spec, spec.untilMaxMs ? Number.POSITIVE_INFINITY : spec.requests, spec.maxMs);
  await close();
  process.stdout.write(JSON.stringify(result));
}
