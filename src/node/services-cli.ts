// Running a media CLI (mflux, DiffusionKit, Qwen3-ASR) for one job: in a temp dir of its own,
// one job at a time per service (each loads gigabytes of weights onto the GPU), stopped when
// its deadline passes or the router gives up, with what it printed kept for the error message.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { log } from "../log.ts";

/** How much of a failed CLI's output goes into the error: its last lines are what say why. */
const OUTPUT_TAIL_CHARS = 400;

/** Runs jobs one after another, in the order they arrive. */
export class OneAtATime {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job);
    this.tail = result.catch(() => {});
    return result;
  }
}

/** A deadline for a job, and why it ended early if it did. */
export interface Deadline {
  signal: AbortSignal;
  timeoutMs: number;
}

export function deadline(clientGone: AbortSignal, timeoutMs: number): Deadline {
  return { signal: AbortSignal.any([clientGone, AbortSignal.timeout(timeoutMs)]), timeoutMs };
}

function whyStopped(d: Deadline): string {
  return (d.signal.reason as Error | undefined)?.name === "TimeoutError" ? `no result within ${d.timeoutMs} ms` : "the router cancelled the request";
}

/** Runs `argv`; null when it exited 0, else why it failed, in words for the client. `label` names the command. */
export async function runCli(label: string, argv: string[], d: Deadline): Promise<string | null> {
  if (d.signal.aborted) return `${label}: ${whyStopped(d)}`;
  let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", signal: d.signal });
  } catch (e) {
    return `cannot run ${label}: ${(e as Error).message}; install it on the node or fix its command in the config`;
  }
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (d.signal.aborted) return `${label} stopped: ${whyStopped(d)}`;
  if (code === 0) return null;
  const said = (stderr.trim() || stdout.trim()).replaceAll(/\s*\n\s*/g, " | ").slice(-OUTPUT_TAIL_CHARS);
  log.debug(`${label} exited with code ${code}`);
  return `${label} exited with code ${code}${said ? `: ${said}` : ""}`;
}

/** Calls `job` with a fresh temp dir, removed afterwards whatever happens. */
export async function inTempDir<T>(prefix: string, job: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    return await job(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** True when the command's program exists (on the PATH, or as the path given). */
export function installed(command: string[]): boolean {
  return Bun.which(command[0]!) !== null;
}
