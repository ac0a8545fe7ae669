// The HTTP shell every sim backend runs in: Bun.serve (or, for a Python server,
// http10.ts), request accounting, fault injection, paced token streaming and
// the /_sim control surface.
import { eitherSignal } from "../abort.ts";
import { flapping, parseFaults, spoiled, tokenIntervalMs, type Faults } from "./faults.ts";
import { type Listener, listenHttp10 } from "./http10.ts";
import { parseMachine, type SimMachine } from "./machine.ts";

/** One write of a response body. */
export interface Frame {
  /** Bytes to send; absent for tokens that are generated but not streamed. */
  data?: string;
  /** A generated token: paced at the token rate, counted by dieAfterTokens. */
  token?: boolean;
  /** A closing frame (final chunk, usage, [DONE]): a dying stream never sends it. */
  tail?: boolean;
  /** Wait this long first (pacing for non-token frames, e.g. pull progress). */
  delayMs?: number;
}

/** Tokens that take generation time but send nothing (e.g. a tool call being written). */
export function* silentTokens(count: number): Generator<Frame> {
  for (let i = 0; i < count; i++) yield { token: true };
}

export interface RequestContext {
  url: URL;
  /** Aborts when the client goes away or the sim stops. */
  signal: AbortSignal;
  tokenIntervalMs: number;
  /** The faults in force for this request (a backend applies the ones about content). */
  faults: Faults;
  /** Sets this request's token rate once the backend knows what runs it (a tokenDelayMs fault still wins). */
  setTokensPerSecond(rate: number): void;
  count(counter: string, by?: number): void;
  /** Sleep that rejects as soon as `signal` aborts. */
  sleep(ms: number): Promise<void>;
  /** A response whose body is `frames`, paced and subject to the request's faults. */
  stream(frames: AsyncIterable<Frame>, headers: Record<string, string>): Response;
}

export interface Backend {
  handle(req: Request, ctx: RequestContext): Promise<Response>;
  /** A 500 shaped the way this backend reports internal errors. */
  error500(url: URL): Response;
  /** Backend-specific part of GET /_sim. */
  state(): Record<string, unknown>;
  /** Keys of a POST /_sim body the backend owns. */
  readonly patchKeys: readonly string[];
  /** Apply those keys; validate everything before changing anything. */
  patch(body: Record<string, unknown>): void;
}

export interface SimServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  setFaults(faults: Faults): void;
  /** What GET /_sim returns. */
  state(): Record<string, unknown>;
  /** What POST /_sim does; returns the new state. */
  patch(body: Record<string, unknown>): Record<string, unknown>;
}

export interface ServeOptions {
  id: string;
  kind: "ollama" | "mlx";
  host?: string;
  port?: number;
  tokensPerSecond?: number;
  faults?: Faults;
  backend: Backend;
  /** Speak HTTP/1.0 as Python's http.server does, with this Server header (http10.ts); else Bun.serve's HTTP/1.1. */
  python?: { server: string };
}

const SHELL_KEYS = ["faults", "tokensPerSecond", "machine"];
/** A sim's token rate when it is given none (and what an Ollama sim embeds at, whatever its bandwidth). */
export const DEFAULT_TOKENS_PER_SECOND = 400;

export function serveSim(opts: ServeOptions): SimServer {
  const { id, kind, backend } = opts;
  let faults = parseFaults(opts.faults ?? {});
  let tokensPerSecond = positive(opts.tokensPerSecond ?? DEFAULT_TOKENS_PER_SECOND, "tokensPerSecond");
  let machine: SimMachine = {};
  let inFlight = 0;
  const counters: Record<string, number> = { requests: 0, errors: 0, tokens: 0, dropped: 0, hung: 0 };
  const count = (counter: string, by = 1) => {
    counters[counter] = (counters[counter] ?? 0) + by;
  };
  const stopping = new AbortController();

  const hostname = opts.host ?? "127.0.0.1";
  const fetch = (req: Request) =>
    (new URL(req.url).pathname === "/_sim" ? control(req) : serve(req)).catch((e: Error) => new Response(`sim ${id}: ${e.message}`, { status: 500 }));
  const listen = (port: number): Listener => {
    if (opts.python) return listenHttp10({ hostname, port, server: opts.python.server, fetch });
    // idleTimeout 0: a hung request must stay hung, not be reaped after 10 s.
    const bun = Bun.serve({ hostname, port, idleTimeout: 0, development: false, fetch });
    return { port: bun.port!, hostname: bun.hostname!, stop: () => bun.stop(true) };
  };
  // null while a flapping node is down: its port is closed, as a crashed server's.
  let server: Listener | null = listen(opts.port ?? 0);
  const port = server.port;
  const url = `http://${server.hostname}:${port}`;
  let stopFlapping: (() => void) | null = null;
  const setFaults = (next: Faults) => {
    stopFlapping?.();
    stopFlapping = null;
    faults = next;
    if (stopping.signal.aborted) return;
    server ??= listen(port);
    if (!next.flapMs) return;
    stopFlapping = flapping(next.flapMs, (up) => {
      if (up) server ??= listen(port);
      else {
        void server?.stop();
        server = null;
      }
    });
  };

  async function serve(req: Request): Promise<Response> {
    const linked = eitherSignal(req.signal, stopping.signal);
    const signal = linked.signal;
    const requestFaults = faults; // a request keeps the faults it arrived with
    count("requests");
    inFlight++;
    let finished = false;
    const finish = () => {
      if (!finished) inFlight--;
      finished = true;
      linked.release();
    };
    let streaming = false;
    const ctx: RequestContext = {
      url: new URL(req.url),
      signal,
      tokenIntervalMs: tokenIntervalMs(requestFaults, tokensPerSecond),
      faults: requestFaults,
      setTokensPerSecond: (rate) => {
        ctx.tokenIntervalMs = tokenIntervalMs(requestFaults, rate);
      },
      count,
      sleep: (ms) => sleep(ms, signal),
      stream: (frames, headers) => {
        streaming = true;
        return new Response(paced(frames, requestFaults, ctx, finish), { headers });
      },
    };
    try {
      if (requestFaults.firstByteDelayMs) await ctx.sleep(requestFaults.firstByteDelayMs);
      if (requestFaults.hang) {
        count("hung");
        return untilAborted(signal);
      }
      if (requestFaults.error500) {
        count("errors");
        return backend.error500(ctx.url);
      }
      const res = await backend.handle(req, ctx);
      if (res.status >= 400) count("errors");
      return res;
    } catch (e) {
      if (signal.aborted) return silentDrop();
      throw e;
    } finally {
      if (!streaming) finish();
    }
  }

  // Streams frames; tokens are paced against a fixed schedule so the rate
  // holds however long each write takes.
  function paced(frames: AsyncIterable<Frame>, f: Faults, ctx: RequestContext, finish: () => void) {
    const encoder = new TextEncoder();
    return new ReadableStream<Uint8Array>({
      async start(controller) {
        const started = performance.now();
        let tokens = 0;
        try {
          for await (const frame of frames) {
            const dies = f.dieAfterTokens !== undefined && (frame.tail || (frame.token && tokens >= f.dieAfterTokens));
            if (dies) {
              // Die when the next write is due, once what was sent has reached the socket.
              await ctx.sleep(Math.max(ctx.tokenIntervalMs, 5));
              count("dropped");
              return controller.error(undefined); // Bun drops the socket: no terminating chunk
            }
            if (frame.token) {
              tokens++;
              count("tokens");
              await ctx.sleep(started + tokens * ctx.tokenIntervalMs - performance.now());
            } else if (frame.delayMs) {
              await ctx.sleep(frame.delayMs);
            }
            if (frame.data !== undefined) {
              const spoil = spoiled(f, frame.data, tokens, frame.tail === true);
              if (spoil) {
                count(spoil.counter);
                controller.enqueue(encoder.encode(spoil.bytes));
                break;
              }
              controller.enqueue(encoder.encode(frame.data));
            }
          }
          controller.close();
        } catch (e) {
          if (!ctx.signal.aborted) console.error(`sim ${id}: response stream failed`, e); // a bug, not a hang-up
          controller.error(undefined);
        } finally {
          finish();
        }
      },
    });
  }

  async function control(req: Request): Promise<Response> {
    if (req.method === "GET") return json(state());
    if (req.method !== "POST") return json({ error: "use GET or POST" }, 405);
    try {
      const body: unknown = await req.json();
      if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error("body must be an object");
      return json(patch(body as Record<string, unknown>));
    } catch (e) {
      return json({ error: (e as Error).message }, 400);
    }
  }

  function state(): Record<string, unknown> {
    return { id, kind, url, tokensPerSecond, faults, machine, inFlight, counters: { ...counters }, ...backend.state() };
  }

  function patch(body: Record<string, unknown>): Record<string, unknown> {
    const unknown = Object.keys(body).filter((k) => !SHELL_KEYS.includes(k) && !backend.patchKeys.includes(k));
    if (unknown.length) throw new Error(`unknown key(s): ${unknown.join(", ")}`);
    const nextFaults = "faults" in body ? parseFaults(body.faults) : faults;
    const nextRate = "tokensPerSecond" in body ? positive(body.tokensPerSecond, "tokensPerSecond") : tokensPerSecond;
    const nextMachine = "machine" in body ? parseMachine(body.machine) : machine;
    backend.patch(body);
    if ("faults" in body) setFaults(nextFaults);
    tokensPerSecond = nextRate;
    machine = nextMachine;
    return state();
  }

  setFaults(faults);
  return {
    url,
    port,
    state,
    patch,
    setFaults: (next) => setFaults(parseFaults(next)),
    async stop() {
      stopFlapping?.();
      stopping.abort(new Error(`sim ${id} stopped`)); // wakes hung requests and sleeping streams
      await server?.stop();
      server = null;
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    // Under a millisecond is no wait: a timer would take a whole one, and paced tokens keep to their schedule anyway.
    if (ms < 1) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** A request that is never answered: the connection is closed, unanswered, once the client (or the sim) gives up. */
export async function untilAborted(signal: AbortSignal): Promise<Response> {
  if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  return silentDrop();
}

/**
 * Close the connection without answering. Erroring the body before any byte
 * is written makes Bun drop the socket without a status line.
 */
export function silentDrop(): Response {
  return new Response(new ReadableStream({ start: (c) => c.error(undefined) }));
}

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });
}

function positive(value: unknown, name: string): number {
  if (typeof value !== "number" || !(value > 0)) throw new Error(`${name} must be a positive number`);
  return value;
}
