// The tmux pane backend: one private tmux server per fleet (`tmux -L <socket>`),
// one tmux session per worker. tmux gets argv, never a shell line. A worker's
// pane starts under `env -i` (tmux would otherwise add TMUX and TMUX_PANE, which
// point at the fleet's socket and would let a worker drive other panes) with a
// launcher shell (LAUNCH) that takes the environment herd built for it from a
// private file, so no credential is ever on a command line.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pasteable } from "./paste.ts";
import { BackendTimeout, type PaneBackend, PaneGone, type PaneInfo, type PaneSpec, type WorkspaceInfo } from "./panes.ts";

/** What tmux itself runs with: enough to find its socket and handle UTF-8, none of herd's secrets. */
function tmuxEnv(): Record<string, string> {
  const keep = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMUX_TMPDIR"];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]!]])));
}

/** Where `tmux -L name` puts its socket. */
const socketPath = (name: string) => join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid!()}`, name);

const TERM = "screen-256color";

/**
 * The pane's first process: exports the worker's environment from the file ($1) and deletes it,
 * runs the command, and writes its exit status to $2 (tmux 3.3 sometimes learns a dead pane's
 * status late or not at all). A command killed by signal N exits 128+N, as in any shell.
 * The terminal is non-canonical first: a cooked tty cuts every line at 4095 bytes, so a program
 * that reads lines would get a long turn truncated (a TUI sets its own raw mode anyway).
 */
const LAUNCH = 'set -a; . "$1"; set +a; rm -f "$1"; __herd_exit="$2"; shift 2; stty -icanon min 1 time 0 2>/dev/null; "$@"; __herd_status=$?; echo "$__herd_status" > "$__herd_exit"; exit "$__herd_status"';

const shellQuote = (v: string) => `'${v.replaceAll("'", "'\\''")}'`;
const COMMAND_TIMEOUT_MS = 10_000;
// "error connecting to <socket>": no tmux server on the socket yet (before the first spawn, after a restart).
const GONE = /can't find (pane|session|window)|no server running|no current target|server exited|error connecting to/;

// Public pane ids carry no "%" (it would need escaping in DELETE /members/{paneId}).
const toPublic = (tmuxId: string) => `pane-${tmuxId.slice(1)}`;
const toTmux = (paneId: string) => {
  const n = /^pane-(\d+)$/.exec(paneId)?.[1];
  if (n === undefined) throw new PaneGone(`no pane ${paneId}`);
  return `%${n}`;
};

export class TmuxBackend implements PaneBackend {
  readonly kind = "tmux";
  private buffers = 0;

  /** `location` is the socket name; `privateDir` (created 0700) passes each worker its environment. */
  constructor(
    readonly location: string,
    private readonly privateDir: string,
  ) {}

  async version(): Promise<string> {
    return (await this.run(["-V"], { socketless: true })).trim();
  }

  async spawn(spec: PaneSpec, timeoutMs: number): Promise<{ paneId: string; pid: number }> {
    // A server started by this command keeps its argv for life (ps shows it): only options go there.
    await this.run(
      [
        "start-server", ";",
        "set-option", "-g", "exit-empty", "off", ";", // pane ids keep counting up while herd runs
        "set-option", "-wg", "remain-on-exit", "on", ";", // a dead pane stays long enough to read its exit status
        "set-option", "-g", "default-terminal", TERM,
      ],
      { timeoutMs },
    );
    // The environment goes through a private file, not argv, where any local user could read the credential.
    mkdirSync(this.privateDir, { recursive: true, mode: 0o700 });
    const envFile = join(this.privateDir, `${spec.name}.env`);
    const exitFile = join(this.privateDir, `${spec.name}.exit`);
    const lines = Object.entries({ TERM, ...spec.env }).map(([k, v]) => `${k}=${shellQuote(v)}\n`);
    writeFileSync(envFile, lines.join(""), { mode: 0o600 });
    try {
      const out = await this.run(
        ["new-session", "-d", "-s", spec.name, "-x", "200", "-y", "50", "-c", spec.cwd, "-P", "-F", "#{pane_id} #{pane_pid}", "--", "env", "-i", "/bin/sh", "-c", LAUNCH, "sh", envFile, exitFile, ...spec.argv],
        { timeoutMs },
      );
      const [id, pid] = out.trim().split(" ");
      return { paneId: toPublic(id!), pid: Number(pid) };
    } catch (e) {
      rmSync(envFile, { force: true });
      throw e;
    }
  }

  async sendText(paneId: string, text: string): Promise<void> {
    const target = toTmux(paneId);
    const buffer = `herd-${++this.buffers}`;
    // -p: bracketed paste when the program asked for it, so a TUI takes a multi-line turn as one input.
    await this.run(["load-buffer", "-b", buffer, "-", ";", "paste-buffer", "-d", "-p", "-b", buffer, "-t", target, ";", "send-keys", "-t", target, "Enter"], { stdin: pasteable(text) });
  }

  async sendKeys(paneId: string, keys: string[]): Promise<void> {
    await this.run(["send-keys", "-t", toTmux(paneId), ...keys]);
  }

  async captureTail(paneId: string, lines: number): Promise<string> {
    return this.run(["capture-pane", "-p", "-J", "-t", toTmux(paneId), "-S", `-${lines}`]);
  }

  async kill(paneId: string): Promise<void> {
    try {
      await this.run(["kill-pane", "-t", toTmux(paneId)]);
    } catch (e) {
      if (!(e instanceof PaneGone)) throw e;
    }
  }

  async panes(): Promise<PaneInfo[]> {
    const format = "#{pane_id}\t#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_current_command}";
    return (await this.list(["list-panes", "-a", "-F", format])).map(([id, workspace, pid, dead, status, signal, command]) => ({
      paneId: toPublic(id!),
      workspace: workspace!,
      pid: Number(pid),
      dead: dead === "1",
      exitStatus: status ? Number(status) : dead === "1" ? this.launcherStatus(workspace!) : null,
      exitSignal: signal ? Number(signal) : null,
      command: command ?? "",
    }));
  }

  /** The exit status LAUNCH wrote for a workspace's command, if it did. */
  private launcherStatus(workspace: string): number | null {
    try {
      const text = readFileSync(join(this.privateDir, `${workspace}.exit`), "utf8").trim();
      return text ? Number(text) : null;
    } catch {
      return null;
    }
  }

  async workspaces(): Promise<WorkspaceInfo[]> {
    const format = "#{session_name}\t#{session_created}\t#{session_windows}\t#{session_attached}";
    return (await this.list(["list-sessions", "-F", format])).map(([name, created, windows, attached]) => ({
      name: name!,
      createdAt: Number(created),
      windows: Number(windows),
      attached: attached !== "0",
    }));
  }

  async killWorkspace(name: string): Promise<void> {
    try {
      await this.run(["kill-session", "-t", `=${name}`]);
      if ((await this.workspaces()).length) return;
      await this.run(["kill-server"]);
      rmSync(socketPath(this.location), { force: true });
    } catch (e) {
      if (!(e instanceof PaneGone)) throw e;
    }
  }

  async shutdown(): Promise<void> {
    try {
      await this.run(["kill-server"]);
    } catch (e) {
      if (!(e instanceof PaneGone)) throw e;
    }
    // tmux leaves its socket file behind; a router per port would otherwise leave one each.
    rmSync(socketPath(this.location), { force: true });
    rmSync(this.privateDir, { recursive: true, force: true });
  }

  /** Tab-separated rows; no server (no worker yet) is an empty list. */
  private async list(args: string[]): Promise<string[][]> {
    try {
      const out = await this.run(args);
      return out.split("\n").filter(Boolean).map((line) => line.split("\t"));
    } catch (e) {
      if (e instanceof PaneGone) return [];
      throw e;
    }
  }

  private async run(args: string[], opts: { stdin?: string; timeoutMs?: number; socketless?: boolean } = {}): Promise<string> {
    const argv = opts.socketless ? ["tmux", ...args] : ["tmux", "-u", "-L", this.location, "-f", "/dev/null", ...args];
    const timeoutMs = opts.timeoutMs ?? COMMAND_TIMEOUT_MS;
    let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
    try {
      proc = Bun.spawn(argv, {
        env: tmuxEnv(),
        stdin: (opts.stdin === undefined ? "ignore" : new Blob([opts.stdin])) as "ignore",
        stdout: "pipe",
        stderr: "pipe",
        timeout: timeoutMs,
        killSignal: "SIGKILL",
      });
    } catch {
      throw new Error("tmux is not installed on the router's machine (apt-get install tmux, brew install tmux)");
    }
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (proc.signalCode === "SIGKILL") throw new BackendTimeout(`tmux did not answer within ${timeoutMs} ms`);
    if (code === 0) return out;
    const message = err.trim() || `tmux exited with status ${code}`;
    throw GONE.test(message) ? new PaneGone(message) : new Error(`tmux: ${message}`);
  }
}
