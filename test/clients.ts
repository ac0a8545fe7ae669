// What the tests of real client programs share (clients-*.test.ts):
// - a router process over simulated Ollama nodes, started once per file;
// - a recorder between the client and the router that keeps every exchange
//   (what the client sent, what herd answered), so a test can check both;
// - a trap that the client's proxy variables point at: a client reaching for
//   anything but loopback is refused there, and the test sees what it asked for;
// - a run of the client's own binary in a fresh home with a scrubbed
//   environment, bounded in time, its whole process group killed at the end;
// - or a shell in a terminal of its own (a tmux pane) with that environment,
//   where a test types a command line as a user would, and reads the screen.
// Everything started here is stopped after the test (or the file) that started it.
import { expect } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, onCleanup, ROOT, startRouterProcess, tmpDir } from "./helpers.ts";

/** Where the pinned clients' binaries are (package.json devDependencies). */
export const BIN = join(ROOT, "node_modules/.bin");

/** A router over sims made from `nodes`; returns its root URL (OpenAI clients add /v1). */
export async function startClientFleet(nodes: SimNodeOptions[]): Promise<{ url: string; sims: SimNode[] }> {
  const sims = await Promise.all(nodes.map((n) => startSimOllama(n)));
  onCleanup({ run: () => Promise.all(sims.map((s) => s.stop())) });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [${sims.map((s) => JSON.stringify({ id: s.id, ollama: s.url })).join(", ")}] };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 5000, "every node online");
  return { url: router.url, sims };
}

export interface Exchange {
  method: string;
  /** Path and query. */
  path: string;
  /** The request body: parsed when it is JSON, else its text ("" for none). */
  body: any;
  status: number;
  headers: Record<string, string>;
  /** The whole answer as text (a stream's, once it ended). */
  answer: string;
}

export interface Recorder {
  /** Point the client here instead of at the router. */
  url: string;
  /** Every exchange so far, answers complete. */
  exchanges(): Promise<Exchange[]>;
}

/** A pass-through to `target` that keeps each request and its answer. */
export function startRecorder(target: string): Recorder {
  const kept: Exchange[] = [];
  const reading: Promise<unknown>[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    async fetch(req) {
      const url = new URL(req.url);
      const raw = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const headers = new Headers(req.headers);
      headers.delete("host");
      const res = await fetch(target + url.pathname + url.search, { method: req.method, headers, body: raw });
      const text = raw ? new TextDecoder().decode(raw) : "";
      const exchange: Exchange = { method: req.method, path: url.pathname + url.search, body: parsed(text), status: res.status, headers: Object.fromEntries(res.headers), answer: "" };
      kept.push(exchange);
      if (!res.body) return new Response(null, { status: res.status, headers: res.headers });
      const [mine, theirs] = res.body.tee();
      reading.push(new Response(mine).text().then((t) => (exchange.answer = t)));
      return new Response(theirs, { status: res.status, headers: res.headers });
    },
  });
  onCleanup({ run: () => server.stop(true) });
  return {
    url: `http://127.0.0.1:${server.port}`,
    async exchanges() {
      await Promise.allSettled(reading);
      return kept;
    },
  };
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface Trap {
  /** A proxy URL for HTTP_PROXY and friends. */
  url: string;
  /** The first line of each connection made to it: `CONNECT github.com:443 HTTP/1.1`. */
  seen: string[];
}

/** A proxy that refuses everything (403) and notes what was asked of it. */
export async function startTrap(): Promise<Trap> {
  const seen: string[] = [];
  const server = createServer((socket) => {
    socket.on("error", () => {});
    socket.once("data", (chunk) => {
      seen.push(chunk.toString("latin1").split("\r\n")[0]!);
      socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onCleanup({ run: () => new Promise((resolve) => server.close(resolve)), kill: () => server.close() });
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, seen };
}

/**
 * The whole environment a client gets: PATH, a fresh home (HOME, the XDG
 * dirs, TMPDIR inside it) and every proxy variable aimed at the trap, with
 * loopback exempt. Nothing else is inherited: no OPENAI_*, CODEX_*,
 * ANTHROPIC_*, OPENCODE_*, OLLAMA_* or proxy settings of the machine.
 */
export function clientEnv(home: string, trap: Trap, extra: Record<string, string> = {}): Record<string, string> {
  const dirs = { XDG_CONFIG_HOME: ".config", XDG_DATA_HOME: ".local/share", XDG_STATE_HOME: ".local/state", XDG_CACHE_HOME: ".cache", TMPDIR: "tmp" };
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TERM: "dumb", NO_COLOR: "1" };
  for (const [name, dir] of Object.entries(dirs)) mkdirSync((env[name] = join(home, dir)), { recursive: true });
  for (const name of ["http_proxy", "https_proxy", "all_proxy"]) env[name] = env[name.toUpperCase()] = trap.url;
  env.no_proxy = env.NO_PROXY = "127.0.0.1,localhost";
  return { ...env, ...extra };
}

export interface ClientRun {
  argv: string[];
  /** The exit code; null when killed at the deadline. */
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs a client to completion in its own process group, killed (with all it
 * started) at `timeoutMs`; whatever it leaves running is killed when it exits.
 * `stdin` is piped in when given, else the client reads an empty stdin.
 */
export async function runClient(argv: string[], opts: { cwd: string; env: Record<string, string>; stdin?: string; timeoutMs?: number }): Promise<ClientRun> {
  const started = Date.now();
  const proc = Bun.spawn(argv, {
    cwd: opts.cwd,
    env: opts.env,
    stdin: opts.stdin === undefined ? "ignore" : Buffer.from(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  const killGroup = () => {
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {} // the group is gone already
  };
  onCleanup({ run: killGroup, kill: killGroup });
  const stdout = new Response(proc.stdout).text();
  const stderr = new Response(proc.stderr).text();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, opts.timeoutMs ?? 60000);
  const code = await proc.exited;
  clearTimeout(timer);
  killGroup();
  return { argv, code: timedOut ? null : code, timedOut, stdout: await stdout, stderr: await stderr, ms: Date.now() - started };
}

const tail = (text: string, max = 6000) => (text.length > max ? `…${text.slice(-max)}` : text);

export interface ClientResult extends ClientRun {
  /** What the client asked of herd, answers complete. */
  exchanges: Exchange[];
  /** What it tried to reach outside loopback (see startTrap). */
  outside: string[];
  /** `what`, then the client's command, exit, stdout, stderr and requests: the message of a failed expect. */
  why(what: string): string;
}

export interface ClientScene {
  /** A fresh HOME (config goes under it). */
  home: string;
  /** A fresh, empty working directory. */
  work: string;
  /** Where the client is to send herd's requests: the recorder in front of the router. */
  url: string;
  run(argv: string[], opts?: { env?: Record<string, string>; stdin?: string; timeoutMs?: number }): Promise<ClientResult>;
  /** A shell in a terminal of its own, in `work`, with the clients' environment (plus `env`) and on its PATH. */
  terminal(env?: Record<string, string>): Promise<Terminal>;
  /** What was asked of herd so far, answers complete. */
  exchanges(): Promise<Exchange[]>;
}

/** A fresh home and working dir, a recorder in front of `routerUrl` and a proxy trap, for one client run (or more). */
export async function clientScene(routerUrl: string): Promise<ClientScene> {
  const dir = tmpDir();
  const home = join(dir, "home");
  const work = join(dir, "work");
  mkdirSync(work, { recursive: true });
  const recorder = startRecorder(routerUrl);
  const trap = await startTrap();
  return {
    home,
    work,
    url: recorder.url,
    async run(argv, opts = {}) {
      const run = await runClient(argv, { cwd: work, env: clientEnv(home, trap, opts.env), stdin: opts.stdin, timeoutMs: opts.timeoutMs });
      const exchanges = await recorder.exchanges();
      const shown = [`$ ${argv.map((a) => (/[\s"'{}]/.test(a) ? JSON.stringify(a) : a)).join(" ")}${opts.stdin === undefined ? "" : ` <<< ${JSON.stringify(opts.stdin)}`}`];
      shown.push(run.timedOut ? `killed at the deadline after ${run.ms} ms` : `exit ${run.code} after ${run.ms} ms`);
      shown.push(`--- stdout\n${tail(run.stdout)}`, `--- stderr\n${tail(run.stderr)}`);
      shown.push(`--- asked of herd\n${exchanges.map((e) => `${e.method} ${e.path} → ${e.status}`).join("\n") || "(nothing)"}`);
      shown.push(`--- asked of the proxy trap\n${trap.seen.join("\n") || "(nothing)"}`);
      const context = shown.join("\n");
      return { ...run, exchanges: [...exchanges], outside: [...trap.seen], why: (what) => `${what}\n${context}` };
    },
    // The pinned clients on the PATH, as a user who installed them has theirs.
    terminal: (env = {}) => startTerminal(work, clientEnv(home, trap, { PATH: `${BIN}:${process.env.PATH ?? "/usr/bin:/bin"}`, TERM: "xterm-256color", ...env })),
    exchanges: () => recorder.exchanges(),
  };
}

export interface Terminal {
  /** Types `text` as it is (press Enter to send it). */
  type(text: string): Promise<void>;
  /** Presses keys, by tmux's names (Enter, Down, Escape). */
  press(...keys: string[]): Promise<void>;
  screen(): Promise<string>;
  /** The screen once it matches `pattern`; fails at `timeoutMs`, showing the screen. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

const MARK = "HERD_TEST_TERMINAL";

/**
 * `sh` in a tmux pane (a private tmux server, 200x50) with exactly `env`, in `cwd`. After the test the server is
 * killed, and so is every process the shell started, found by the mark each inherits (a TUI that outlives the
 * hang-up would otherwise run on).
 */
async function startTerminal(cwd: string, env: Record<string, string>): Promise<Terminal> {
  const socket = `herd-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = async (...args: string[]) => {
    const proc = Bun.spawn(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe", env: { PATH: env.PATH!, TMUX_TMPDIR: env.TMPDIR! } });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`tmux ${args.join(" ")}: ${err.trim()}`);
    return out;
  };
  const assignments = Object.entries({ ...env, [MARK]: socket }).map(([k, v]) => `${k}=${v}`);
  await tmux("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-c", cwd, "env", "-i", ...assignments, "sh");
  const stop = () => {
    Bun.spawnSync(["tmux", "-L", socket, "kill-server"], { env: { PATH: env.PATH!, TMUX_TMPDIR: env.TMPDIR! } });
    killMarked(socket);
  };
  onCleanup({ run: stop, kill: stop });
  const screen = () => tmux("capture-pane", "-p");
  return {
    async type(text) {
      await tmux("send-keys", "-l", text);
    },
    async press(...keys) {
      for (const key of keys) await tmux("send-keys", key);
    },
    screen,
    async waitFor(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last = "";
      while (Date.now() < deadline) {
        last = await screen();
        if (pattern.test(last)) return last;
        await Bun.sleep(200);
      }
      throw new Error(`the terminal did not show ${pattern} within ${timeoutMs} ms; it shows:\n${last}`);
    },
  };
}

/** SIGKILLs every process whose environment holds MARK=`value` (Linux: /proc). */
function killMarked(value: string): void {
  const mark = `${MARK}=${value}\0`;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, "latin1").includes(mark)) process.kill(Number(pid), "SIGKILL");
    } catch {} // gone already, or not ours to read
  }
}

/** The JSON of each `data:` line of an SSE answer (Responses events, Chat Completions chunks); `[DONE]` left out. */
export function sseData(answer: string): any[] {
  return answer
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)));
}

interface WireExchange {
  request: string;
  response: string;
}

/**
 * A fetch for a client library that keeps what went over the wire, so a
 * failing assertion can show the bytes herd sent (describe()), and explain()
 * adds them to a library's own error.
 */
export class Wire {
  readonly exchanges: WireExchange[] = [];

  readonly fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    const exchange: WireExchange = { request: `${init?.method ?? "GET"} ${new URL(url).pathname} ${typeof init?.body === "string" ? init.body : ""}`, response: "(no answer)" };
    this.exchanges.push(exchange);
    const res = await fetch(input, init);
    exchange.response = `${res.status} ${res.headers.get("content-type") ?? ""} (reading)`;
    void res
      .clone()
      .text()
      .then((text) => (exchange.response = `${res.status} ${res.headers.get("content-type") ?? ""}\n${text}`));
    return res;
  }) as typeof fetch;

  /** The last few exchanges, trimmed. */
  describe(last = 2): string {
    // A stream's end (finish reason, usage) matters as much as its start.
    const trim = (s: string) => (s.length > 1600 ? `${s.slice(0, 600)} … ${s.slice(-1000)}` : s);
    return this.exchanges
      .slice(-last)
      .map((e) => `>> ${trim(e.request)}\n<< ${trim(e.response)}`)
      .join("\n");
  }

  /** Runs a client call; if it throws, the error also says what went over the wire. */
  async explain<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      const err = e as Error & { responseBody?: string };
      throw new Error(`${what}: ${err?.message ?? String(e)}${err?.responseBody ? `\nresponse body: ${err.responseBody}` : ""}\n${this.describe()}`, { cause: e });
    }
  }
}

/** A client's stdout as JSON lines (`--json`, `--format json`, `stream-json`); a line that is not JSON fails the test, naming it. */
export function jsonLines(r: ClientResult, flag: string): any[] {
  return r.stdout
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        expect.unreachable(r.why(`stdout: a ${flag} line is not JSON: ${line}`));
      }
    });
}
