// Black-box helpers: run the CLI as a user would, as a real subprocess, and
// make sure every process a test starts is stopped. What a test starts is
// cleaned up after that test; what a file starts outside any test (in
// beforeAll) after that file calls cleanupFile(), or at the latest when the
// run ends (test/setup.ts, preloaded by bunfig.toml, wires both).
import { expect } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..");
export const CLI = join(ROOT, "src/cli.ts");
const BUN = process.execPath;

type Cleanup = { run: () => unknown; kill?: () => void };
const perTest: Cleanup[] = [];
const perFile: Cleanup[] = [];
let inTest = false;

/** Runs `c` after the current test (or, outside a test, after the file). */
export function onCleanup(c: Cleanup): void {
  (inTest ? perTest : perFile).push(c);
}

async function drain(list: Cleanup[]): Promise<void> {
  for (const c of list.splice(0).reverse()) await c.run();
}

export function testStarted(): void {
  inTest = true;
}

export async function cleanupTest(): Promise<void> {
  inTest = false;
  await drain(perTest);
}

export async function cleanupFile(): Promise<void> {
  await drain(perTest);
  await drain(perFile);
}

/** Last resort when the test process exits (a crash, a timeout): no child outlives it. */
export function killAllNow(): void {
  for (const c of [...perTest, ...perFile]) c.kill?.();
}

/** `count` distinct loopback ports free now: each probe is held open until all are picked, so none is handed out twice. */
export async function freePorts(count: number): Promise<number[]> {
  const probes = Array.from({ length: count }, () => Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() }));
  const ports = probes.map((p) => p.port!);
  await Promise.all(probes.map((p) => p.stop(true)));
  return ports;
}

export function tmpDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "herd-test-"));
  onCleanup({ run: () => rmSync(dir, { recursive: true, force: true }) });
  return dir;
}

const baseEnv = () => {
  const env: Record<string, string | undefined> = { ...process.env, HERD_LOG_LEVEL: "info" };
  for (const k of ["HERD_CONFIG", "HERD_PORT", "HERD_HOST", "HERD_DATA_DIR", "HERD_ROUTER", "HERD_NODE_ID"]) delete env[k];
  return env;
};

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `herd ARGS` to completion (bounded by timeoutMs). */
export async function herd(args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; bin?: string } = {}): Promise<CliResult> {
  const proc = Bun.spawn(opts.bin ? [opts.bin, ...args] : [BUN, CLI, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...baseEnv(), ...opts.env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 15000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export interface Running {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Everything printed so far (stdout and stderr interleaved by arrival). */
  output(): string;
  /** Waits until the output matches, or fails after timeoutMs. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * Starts a long-running `herd ARGS`; it is killed after the test file at the latest. `group`: in a process group of
 * its own, signalled whole (a shell line's programs with the shell).
 */
export function spawnHerd(args: string[], opts: { cwd?: string; env?: Record<string, string>; bin?: string; group?: boolean } = {}): Running {
  const proc = Bun.spawn(opts.bin ? [opts.bin, ...args] : [BUN, CLI, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...baseEnv(), ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: opts.group ?? false,
  });
  const kill = (signal: NodeJS.Signals) => {
    try {
      if (opts.group) process.kill(-proc.pid, signal);
      else proc.kill(signal);
    } catch {} // gone already
  };
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const running: Running = {
    proc,
    output: () => text,
    async waitFor(pattern, timeoutMs = 10000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const m = text.match(pattern);
        if (m) return m;
        if (proc.exitCode !== null) break;
        await Bun.sleep(25);
      }
      throw new Error(`timed out waiting for ${pattern}; output so far:\n${text}`);
    },
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null) kill(signal);
      const timer = setTimeout(() => kill("SIGKILL"), 5000);
      const code = await proc.exited;
      clearTimeout(timer);
      // What the group's leader left running goes with it.
      if (opts.group) kill("SIGKILL");
      return code;
    },
  };
  onCleanup({ run: () => running.stop("SIGKILL"), kill: () => kill("SIGKILL") });
  return running;
}

/** Starts a router (`herd ARGS`, which must include --port 0) and returns its URL once it serves. */
export async function startRouterProcess(args: string[], opts: { cwd?: string; env?: Record<string, string>; bin?: string } = {}) {
  const running = spawnHerd(args, opts);
  const m = await running.waitFor(/serving on (http:\/\/[\d.]+:\d+)/);
  return { ...running, url: m[1]! };
}

/** Polls `check` until it returns a truthy value, or fails after timeoutMs. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 5000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
}

export async function getJson<T = any>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Seed 000's canonical X-Fleet-* set of an answer, by header: each is there on every proxied response, refusals included. */
export function fleetSet(res: Response): Record<string, string | null> {
  const names = ["node", "served-model", "requested-model", "fallback", "backend", "retries"];
  return Object.fromEntries(names.map((name) => [name, res.headers.get(`x-fleet-${name}`)]));
}

/** The set of a request refused before routing (a 400): no node, no retry, and the model it asked for. */
export function refusedSet(requested: string): Record<string, string> {
  return { node: "none", "served-model": "none", "requested-model": requested, fallback: "false", backend: "none", retries: "0" };
}

/** Sends `n` whole chats for `model` at once, each a 200; the node that served each (X-Fleet-Node), in order. */
export function chatBurst(routerUrl: string, model: string, n: number): Promise<(string | null)[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${routerUrl}/api/chat`, {
        method: "POST",
        body: JSON.stringify({ model, messages: [{ role: "user", content: `say something, ${i}` }], stream: false }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return res.headers.get("x-fleet-node");
    }),
  );
}

/**
 * A stand-in Ollama written in the test, on a free port: /api/version, and /api/tags and /api/ps listing `models` (each
 * resident, of `size` bytes), unless `answer` takes them; every other request goes to `answer` first.
 */
export function standInOllama(opts: { models: string[]; size?: number; version?: string; answer(req: Request, path: string): Response | null | Promise<Response | null> }): ReturnType<typeof Bun.serve> {
  const entries = opts.models.map((name) => ({ name, model: name, size: opts.size ?? 1e9, details: { parameter_size: "1B" } }));
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const answered = await opts.answer(req, path);
      if (answered) return answered;
      if (path === "/api/version") return Response.json({ version: opts.version ?? "0.14.0" });
      if (path === "/api/tags") return Response.json({ models: entries });
      if (path === "/api/ps") return Response.json({ models: entries.map((e) => ({ ...e, size_vram: e.size })) });
      return new Response("404 page not found", { status: 404 });
    },
  });
}
