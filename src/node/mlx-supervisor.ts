// The node agent's MLX servers: one mlx_lm.server subprocess per server in the
// node's config entry, started (after the memory gate and a check that nobody
// else holds its port), health-polled on /v1/models, restarted with backoff when
// it dies or hangs, quarantined when it crash-loops, and stopped (SIGTERM, then
// SIGKILL) when it leaves the config or the agent stops. Before the first start
// of a command line it reads the options that mlx_lm.server takes from its --help.
// A server is ready once a one-token completion answers (mlx-lm 0.31.3 and later
// listen before their model is in); one whose generation thread dies (a load that
// failed) is killed and restarted like a crash.
// Decisions live in mlx-policy.ts; this module only runs processes and keeps their state.
import { connect } from "node:net";
import { errorText } from "../backends/mlx-events.ts";
import { describeFetchError } from "../backends/ollama.ts";
import { responseText } from "../core/capped-body.ts";
import type { LiveConfig } from "../config/live.ts";
import type { NodeEntry } from "../config/schema.ts";
import { MAX_STATUS_REASON, type MlxServerStatus } from "../fleet/heartbeat.ts";
import { log } from "../log.ts";
import type { MemoryInfo } from "./collectors.ts";
import { modelSizeGb, trainedContext } from "./mlx-model-files.ts";
import { afterCrash, hungTooLong, memoryGate, type MlxServerEntry, type Poll, readPoll, STARTING_REASON, serverArgs } from "./mlx-policy.ts";
import { argparseOptions, PythonStderr } from "./python-output.ts";

/** Health polls while a server loads come at least this often, so it serves soon after it can. */
const LOADING_POLL_MS = 1000;
/** How long a server gets to exit after SIGTERM before it is killed. */
const STOP_GRACE_MS = 5000;
/** How long an exit waits for the rest of the server's stderr, whose last line says why it died. */
const STDERR_DRAIN_MS = 200;
/** How long `mlx_lm.server --help` may take (Python imports mlx and transformers first: seconds). */
const HELP_TIMEOUT_MS = 60_000;
/** More help than this is not argparse's. */
const MAX_HELP_BYTES = 256 * 1024;

export interface MlxSupervisorOptions {
  nodeId: string;
  live: LiveConfig;
  /** This node's config entry; none means no MLX servers. */
  entry: () => NodeEntry | undefined;
  memory: () => Promise<MemoryInfo>;
}

export interface MlxSupervisor {
  /** Every server, in the heartbeat's shape (seed 000's mlx_servers). */
  statuses(): MlxServerStatus[];
  /** Follows the node's entry as it is now: new servers start, changed ones restart, removed ones stop; the rest are untouched. */
  reconcile(): Promise<void>;
  /** Stops every server and waits for them to exit. */
  stop(): Promise<void>;
}

interface Supervised {
  server: MlxServerEntry;
  command: string[];
  bindHost: string;
  /** The command line: a server whose command line changes is restarted. */
  key: string;
  status: MlxServerStatus["status"];
  reason: string;
  /** What its command line leaves out of the config entry (mlx-policy.ts serverArgs), said beside its status. */
  note: string;
  /** The KV-cache bits it runs with: the configured ones, or 0 once its command line leaves --kv-bits out. */
  kvBits: number;
  sizeGb: number;
  /** The model's trained context, from its config.json; null until it can be read. */
  contextLength: number | null;
  lastOkTs: number | null;
  proc: Bun.Subprocess<"ignore", "ignore", "pipe"> | null;
  /** When the running process first answered /v1/models (it listens), or null. */
  listenedAt: number | null;
  /** A completion has answered: its model is in, its generation thread alive. */
  ready: boolean;
  /** The process the readiness completion in flight was sent to: one at a time, as each costs a generation once the model is in. */
  probing: Supervised["proc"];
  /** Why the last readiness completion did not answer, for the loading reason. */
  notReady: string;
  unhealthySince: number | null;
  /** Set when the supervisor kills the server (a hang, a dead generation thread), so its exit is reported as what it was. */
  killedFor: string | null;
  crashes: number[];
  /** No start before this time (ms epoch): backoff or quarantine. */
  notBefore: number;
  removed: boolean;
  /** The running process's stderr, read for why it fails. */
  stderr: PythonStderr;
}

export function startMlxSupervisor(opts: MlxSupervisorOptions): MlxSupervisor {
  const servers = new Map<number, Supervised>();
  const prefix = (s: Supervised) => `node ${opts.nodeId}: MLX ${s.server.model} on :${s.server.port}`;
  let stopped = false;
  let timer: Timer | null = null;
  let nextTickAt = 0;
  let ticking = false;
  let reconciling: Promise<void> = Promise.resolve();
  // The options each command line's mlx_lm.server lists in its --help: read once, kept while it serves.
  const options = new Map<string, Promise<ReadonlySet<string> | null>>();
  const optionsOf = (command: string[]): Promise<ReadonlySet<string> | null> => {
    const key = JSON.stringify(command);
    let read = options.get(key);
    if (!read) {
      options.set(key, (read = helpOptions(command)));
      // A help that could not be read is read again at the next start (mlx-lm may be installed by then).
      void read.then((found) => found || options.delete(key));
    }
    return read;
  };

  const set = (s: Supervised, status: Supervised["status"], reason: string) => {
    // A reason that counts time (starting, loading) is no change of its own.
    const changed = status !== s.status || (status !== "starting" && status !== "loading" && reason !== s.reason);
    s.status = status;
    s.reason = reason;
    if (!changed) return;
    const line = `${prefix(s)}: ${status}${reason ? ` (${reason})` : ""}`;
    if (status === "quarantined") log.error(line);
    else if (status === "starting") log.debug(line); // "started (pid …)" said it
    else if (status === "healthy" || status === "loading" || status === "stopped") log.info(line);
    else log.warn(line);
  };

  // One tick at a time; a sooner wake-up (a restart after a short backoff) replaces a later one.
  const schedule = (ms: number) => {
    if (stopped) return;
    const at = Date.now() + ms;
    if (timer && nextTickAt <= at) return;
    if (timer) clearTimeout(timer);
    nextTickAt = at;
    timer = setTimeout(run, ms);
  };
  const run = async () => {
    timer = null;
    if (ticking) return schedule(50);
    ticking = true;
    try {
      await tick();
    } catch (e) {
      log.error(`node ${opts.nodeId}: MLX supervisor tick failed: ${(e as Error).message}`);
    } finally {
      ticking = false;
      const loading = [...servers.values()].some((s) => s.proc && !s.ready);
      const interval = opts.live.config.heartbeat.intervalMs;
      schedule(loading ? Math.min(LOADING_POLL_MS, interval) : interval);
    }
  };

  async function tick(): Promise<void> {
    await Promise.all([...servers.values()].filter((s) => s.proc).map(poll));
    // Starts go one by one: each start's memory gate counts the servers started before it.
    for (const s of [...servers.values()]) if (!s.proc && !s.removed && Date.now() >= s.notBefore) await tryStart(s);
  }

  async function poll(s: Supervised): Promise<void> {
    const proc = s.proc!;
    const result = await pollHealth(probeHost(s.bindHost), s.server.port, opts.live.config.timeouts.connectMs);
    if (s.proc !== proc || s.removed) return;
    const now = Date.now();
    const health = readPoll(result, s.listenedAt !== null, s.ready);
    if (result.ok) {
      s.listenedAt ??= now;
      s.unhealthySince = null;
      if (s.ready) s.lastOkTs = now / 1000;
      else if (s.probing !== proc) void checkReady(s, proc);
    } else if (health.status === "unhealthy") s.unhealthySince ??= now;
    if (health.status === "loading") {
      set(s, "loading", `${health.reason}; ${Math.round((now - s.listenedAt!) / 1000)} s so far${s.notReady ? `; last: ${s.notReady}` : ""}`);
    } else set(s, health.status, health.reason);
    if (!s.killedFor && hungTooLong(s.unhealthySince, now)) {
      s.killedFor = `${health.reason} for ${Math.round((now - s.unhealthySince!) / 1000)}s; killed`;
      void terminate(proc);
    }
  }

  // The deadline is the router's own for an MLX request: a one-token completion past it is not ready.
  async function checkReady(s: Supervised, proc: NonNullable<Supervised["proc"]>): Promise<void> {
    s.probing = proc;
    const answer = await completes(probeHost(s.bindHost), s.server.port, opts.live.config.mlx.wallClockTimeoutMs);
    if (s.probing === proc) s.probing = null;
    if (s.proc !== proc || s.removed) return;
    if (!answer.ok) return void (s.notReady = answer.detail);
    s.ready = true;
    s.lastOkTs = Date.now() / 1000;
    void readModelFiles(s); // mlx_lm may have just downloaded it
    set(s, "healthy", "");
  }

  async function tryStart(s: Supervised): Promise<void> {
    const entry = opts.entry();
    const { port } = s.server;
    if (await portAnswers(probeHost(s.bindHost), port)) {
      return set(s, "unhealthy", `port ${port} is already in use by a process herd did not start (an orphaned mlx_lm.server?); stop it (lsof -i :${port}) or give this server another port`);
    }
    await readModelFiles(s);
    const memory = await opts.memory();
    // Servers not ready yet (starting, loading) have not taken their memory yet: count it as taken.
    const loading = [...servers.values()].filter((o) => o !== s && o.proc && !o.ready).reduce((sum, o) => sum + o.sizeGb, 0);
    // A collector that cannot read memory (total 0) blocks nothing.
    const blocked = memory.total_gb > 0 ? memoryGate(s.sizeGb, entry?.mlxMemoryHeadroomGb ?? 10, Math.max(0, memory.available_gb - loading)) : null;
    if (blocked) return set(s, "memory_blocked", blocked);
    const accepts = await optionsOf(s.command);
    if (s.removed || stopped) return;
    spawn(s, accepts);
  }

  async function readModelFiles(s: Supervised): Promise<void> {
    [s.sizeGb, s.contextLength] = await Promise.all([modelSizeGb(s.server.model), trainedContext(s.server.model)]);
  }

  function spawn(s: Supervised, accepts: ReadonlySet<string> | null): void {
    const { args, leftOut } = serverArgs(s.server, s.bindHost, accepts);
    const argv = [...s.command, ...args];
    s.note = leftOut.join("; ");
    s.kvBits = args.includes("--kv-bits") ? s.server.kvBits : 0;
    if (!accepts) log.warn(`${prefix(s)}: could not read the options of ${s.command.join(" ")} --help; passing every configured one`);
    let proc: Supervised["proc"];
    try {
      // Its own process group, so a stop reaches whatever the command starts (a wrapper script and its python).
      proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "pipe", detached: true });
    } catch (e) {
      return crashed(s, `cannot run ${s.command[0]}: ${(e as Error).message}; install mlx-lm (pip install mlx-lm) or set nodes[].mlxCommand`);
    }
    Object.assign(s, { proc, listenedAt: null, ready: false, probing: null, notReady: "", unhealthySince: null, killedFor: null, stderr: new PythonStderr() });
    log.info(`${prefix(s)}: started (pid ${proc.pid}): ${argv.join(" ")}`);
    set(s, "starting", STARTING_REASON);
    const drained = followStderr(s, proc);
    void proc.exited.then(async () => {
      await Promise.race([drained, Bun.sleep(STDERR_DRAIN_MS)]);
      if (s.proc !== proc) return;
      s.proc = null;
      if (s.removed || stopped) return set(s, "stopped", "stopped by the node agent");
      const last = s.stderr.reason;
      const why = s.killedFor ?? (proc.signalCode ? `subprocess killed by ${proc.signalCode}` : `subprocess exited rc=${proc.exitCode}`);
      // Exit 2 is argparse's usage error: what this command line takes may have changed (an upgrade); its help is read again.
      if (proc.exitCode === 2) options.delete(JSON.stringify(s.command));
      crashed(s, last && !s.killedFor ? `${why} (${last})` : why);
    });
  }

  function crashed(s: Supervised, why: string): void {
    const now = Date.now();
    const next = afterCrash(s.crashes, now);
    s.crashes = next.crashes;
    s.notBefore = now + next.restartInMs;
    if (next.quarantine) set(s, "quarantined", `${next.quarantine}; last: ${why}`);
    else set(s, "unhealthy", `${why}; restarting in ${next.restartInMs / 1000}s`);
    schedule(next.restartInMs);
  }

  // The server's log goes to herd's at debug level, and is read for the crash reason.
  async function followStderr(s: Supervised, proc: NonNullable<Supervised["proc"]>): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    try {
      for await (const chunk of proc.stderr) {
        const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
        partial = lines.pop()!;
        for (const line of lines.filter((l) => l.trim())) {
          log.debug(`${prefix(s)}: ${line.trim()}`);
          if (s.proc !== proc) continue;
          const alive = !s.stderr.threadDied;
          s.stderr.line(line);
          if (alive && s.stderr.threadDied) setTimeout(() => threadDied(s, proc), STDERR_DRAIN_MS);
        }
      }
    } catch {
      // the pipe closes with the process
    }
  }

  // mlx_lm.server's one thread that dies of an exception is its generation thread (0.31.3 and later load the model
  // in it): every completion would then wait for ever, while /v1/models still answers. Its traceback, read whole by
  // now, says why.
  function threadDied(s: Supervised, proc: NonNullable<Supervised["proc"]>): void {
    if (s.proc !== proc || s.killedFor) return;
    s.killedFor = `${s.ready ? "its generation thread died" : "its model did not load"}: ${s.stderr.reason}; killed`;
    void terminate(proc);
  }

  async function stopOne(s: Supervised): Promise<void> {
    s.removed = true;
    if (s.proc) await terminate(s.proc);
    set(s, "stopped", "stopped by the node agent");
  }

  async function reconcileNow(): Promise<void> {
    const entry = opts.entry();
    const wanted = new Map((entry?.mlx ?? []).map((server) => [server.port, server]));
    const command = entry?.mlxCommand ?? ["mlx_lm.server"];
    const bindHost = entry?.mlxBindHost ?? "127.0.0.1";
    const changes: Promise<void>[] = [];
    for (const [port, s] of servers) {
      const server = wanted.get(port);
      if (server && keyOf(command, server, bindHost) === s.key) continue;
      servers.delete(port);
      changes.push(stopOne(s));
    }
    await Promise.all(changes);
    for (const [port, server] of wanted) {
      if (servers.has(port)) continue;
      servers.set(port, {
        server,
        command,
        bindHost,
        key: keyOf(command, server, bindHost),
        status: "starting",
        reason: "",
        note: "",
        kvBits: server.kvBits,
        sizeGb: 0,
        contextLength: null,
        lastOkTs: null,
        proc: null,
        listenedAt: null,
        ready: false,
        probing: null,
        notReady: "",
        unhealthySince: null,
        killedFor: null,
        crashes: [],
        notBefore: 0,
        removed: false,
        stderr: new PythonStderr(),
      });
    }
    schedule(0);
  }

  return {
    statuses: () =>
      [...servers.values()].map((s) => ({
        port: s.server.port,
        model: s.server.model,
        status: s.status,
        status_reason: [s.reason, s.note].filter(Boolean).join("; ").slice(0, MAX_STATUS_REASON),
        kv_bits: s.kvBits,
        model_size_gb: Math.round(s.sizeGb * 10) / 10,
        last_ok_ts: s.lastOkTs,
        context_length: s.contextLength,
      })),
    reconcile() {
      reconciling = reconciling.then(reconcileNow).catch((e: Error) => log.error(`node ${opts.nodeId}: MLX servers not updated: ${e.message}`));
      return reconciling;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await reconciling;
      await Promise.all([...servers.values()].map(stopOne));
    },
  };
}

function keyOf(command: string[], server: MlxServerEntry, bindHost: string): string {
  return JSON.stringify([...command, ...serverArgs(server, bindHost, null).args]);
}

/** The long options `COMMAND --help` lists, or null when it lists none (not installed, not argparse, too slow). */
async function helpOptions(command: string[]): Promise<ReadonlySet<string> | null> {
  try {
    const proc = Bun.spawn([...command, "--help"], { stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    const timer = setTimeout(() => proc.kill("SIGKILL"), HELP_TIMEOUT_MS);
    const decoder = new TextDecoder();
    let help = "";
    for await (const chunk of proc.stdout) {
      help += decoder.decode(chunk, { stream: true });
      if (help.length > MAX_HELP_BYTES) proc.kill("SIGKILL");
    }
    await proc.exited;
    clearTimeout(timer);
    const found = argparseOptions(help);
    return found.has("--model") ? found : null;
  } catch {
    return null;
  }
}

/** Where the agent itself reaches a server bound to `bindHost`. */
function probeHost(bindHost: string): string {
  if (bindHost === "0.0.0.0" || bindHost === "::" || bindHost === "") return "127.0.0.1";
  return bindHost.includes(":") ? `[${bindHost}]` : bindHost;
}

async function pollHealth(host: string, port: number, timeoutMs: number): Promise<Poll> {
  try {
    const res = await fetch(`http://${host}:${port}/v1/models`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok ? { ok: true } : { ok: false, refused: false, detail: `/v1/models answered HTTP ${res.status}` };
  } catch (e) {
    const detail = describeFetchError(e, timeoutMs);
    return { ok: false, refused: detail === "connection refused", detail: `/v1/models: ${detail}` };
  }
}

/** A one-token completion is a few hundred bytes; an error page a few KB. */
const ONE_TOKEN_CAP = { bytes: 1024 * 1024, setting: "a one-token completion, 1 MB" };

/** A one-token completion of the server's own model: it answers once the model is in and its generation thread alive. */
async function completes(host: string, port: number, timeoutMs: number): Promise<{ ok: true } | { ok: false; detail: string }> {
  try {
    const res = await fetch(`http://${host}:${port}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "hi", max_tokens: 1 }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await responseText(res, ONE_TOKEN_CAP);
    return res.ok ? { ok: true } : { ok: false, detail: `a one-token completion answered HTTP ${res.status} (${errorText(text)})` };
  } catch (e) {
    return { ok: false, detail: `a one-token completion: ${describeFetchError(e, timeoutMs)}` };
  }
}

/** Something already accepts connections on the port. */
function portAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: host.replace(/^\[|\]$/g, ""), port });
    const done = (answers: boolean) => {
      socket.destroy();
      resolve(answers);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

// SIGTERM to the whole group, SIGKILL after the grace period.
async function terminate(proc: Bun.Subprocess): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, sig);
    } catch {
      proc.kill(sig); // the group is gone or was never made: the process alone
    }
  };
  signal("SIGTERM");
  let timer: Timer | undefined;
  const grace = new Promise<"grace">((resolve) => {
    timer = setTimeout(() => resolve("grace"), STOP_GRACE_MS);
  });
  const outcome = await Promise.race([proc.exited, grace]);
  clearTimeout(timer);
  if (outcome === "grace") {
    signal("SIGKILL");
    await proc.exited;
  }
}
