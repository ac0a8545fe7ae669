// launchctl, as `herd service` uses it: through a command runner the tests drive, reading only exit
// statuses and launchctl's one-line errors ("Bootstrap failed: 5: Input/output error"), never the
// text of `print`, which man launchctl says is not API. Each error it knows becomes what to do
// (test/fixtures/launchctl/SOURCES.md has the real outputs and where each comes from).
import { UserError } from "../errors.ts";

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end. stdin is the terminal's, so that sudo can ask for a password. */
export type Run = (argv: string[]) => Ran;

export const spawnRun: Run = (argv) => {
  try {
    const r = Bun.spawnSync(argv, { stdin: "inherit", stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode ?? 1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  } catch (e) {
    return { code: 127, stdout: "", stderr: `cannot run ${argv[0]}: ${(e as Error).message}` };
  }
};

// bootout returns before the job has exited: launchd sends SIGTERM, then SIGKILL after the job's exit
// timeout (5 s by default), and only then removes the label; a bootstrap before that fails with 5
// (openclaw/openclaw#136453, Layr-Labs/d-inference#1102: the label was gone ~3 s after bootout).
const GONE_POLLS = 50;
const GONE_POLL_MS = 200;

/** launchctl in one domain: the user's GUI session ("gui/501") or the system domain, changed through sudo. */
export class Launchctl {
  constructor(
    private readonly run: Run,
    private readonly sleep: (ms: number) => void,
    readonly domain: string,
    /** Prefix for the commands that change the domain (["sudo"] for the system domain when not root). */
    private readonly privileged: string[] = [],
  ) {}

  /** Whether the domain exists: a GUI domain only while its user is logged in at the screen (man launchctl). */
  domainExists(): Ran {
    return this.run(["launchctl", "print", this.domain]);
  }

  /** Whether the label is loaded in the domain (anyone may query the system domain: man launchctl). */
  loaded(label: string): boolean {
    return this.run(["launchctl", "print", `${this.domain}/${label}`]).code === 0;
  }

  /** Unloads the label and waits, bounded, until launchd has let it go. */
  unload(label: string): void {
    const target = `${this.domain}/${label}`;
    const out = this.run([...this.privileged, "launchctl", "bootout", target]);
    for (let i = 0; i < GONE_POLLS; i++) {
      if (!this.loaded(label)) return;
      this.sleep(GONE_POLL_MS);
    }
    if (out.code !== 0) throw new UserError(explain(["launchctl", "bootout", target], out, this.domain, target));
    throw new UserError(`${target} is still loaded ${(GONE_POLLS * GONE_POLL_MS) / 1000} s after launchctl bootout: its process has not exited; run the command again once \`launchctl print ${target}\` fails`);
  }

  load(label: string, path: string): void {
    const argv = ["launchctl", "bootstrap", this.domain, path];
    const out = this.run([...this.privileged, ...argv]);
    if (out.code !== 0) throw new UserError(explain(argv, out, this.domain, `${this.domain}/${label}`));
  }
}

/** launchctl's error number and text: from its "… failed: N: text" line, else its exit status (the same number). */
export function launchctlError(out: Ran): { code: number; text: string } {
  const line = /failed: (\d+): ([^\n]+)/.exec(out.stderr + out.stdout);
  if (line) return { code: Number(line[1]), text: line[2]!.trim() };
  return { code: out.code, text: (out.stderr || out.stdout).trim().split("\n").at(-1)?.slice(0, 300) || `exit ${out.code}` };
}

/** What a failed launchctl command means and what to do, in one line. */
export function explain(argv: string[], out: Ran, domain: string, target: string): string {
  const { code, text } = launchctlError(out);
  const failed = `${argv.join(" ")} failed (${code}: ${text})`;
  const system = domain === "system";
  switch (code) {
    case 1: // EPERM: the system domain takes changes from root only (man launchctl).
      return system
        ? `${failed}: the system domain takes changes only from root; herd runs these through sudo: check that \`sudo -v\` works for you`
        : `${failed}: run it as the user the service is for, not through sudo`;
    case 5: // EIO: launchd's catch-all; the reason is in its log.
      return `${failed}: launchd gives no reason with this error. Usually the label was still stopping (run the command again in a few seconds), is disabled (\`${system ? "sudo " : ""}launchctl enable ${target}\`), or the plist's program or log directory cannot be read; \`log show --last 5m --predicate 'process == "launchd" OR process == "xpcproxy"'\` says which`;
    case 37: // EALREADY
      return `${failed}: ${target} was loaded again while herd replaced it; run the command again`;
    case 112: // Could not find specified domain
    case 125: // Domain does not support specified action
      return system ? `${failed}: the system domain takes this only from root` : `${failed}: ${noGuiSession(domain)}`;
    case 113:
      return `${failed}: ${target} is not loaded`;
    default:
      return failed;
  }
}

/** Why a LaunchAgent cannot run now, and what to install instead. */
export function noGuiSession(domain: string): string {
  return `there is no GUI login session (${domain}) for this user: nobody is logged in as you at the screen (an SSH login does not make one), and a LaunchAgent runs only inside one and stops at logout. Install the LaunchDaemon instead: the same command with --daemon (herd then starts at boot, as you, and asks sudo to install it)`;
}
