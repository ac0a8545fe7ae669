// Ending a worker for good. Killing its pane hangs up the pane's process group, but a
// child that ignores the hang-up (nohup) or left the group (setsid, a daemon such as
// `codex app-server`) would live on with the worker's credential. Every process a worker
// starts inherits its HERD_SESSION_ID, so herd finds them all by that mark in their
// environment (Linux: /proc/<pid>/environ, the environment each process was started with),
// plus the pane's process group, and ends them: SIGTERM, then SIGKILL for what stays.
import { readdirSync, readFileSync } from "node:fs";

const GRACE_MS = 2_000;
const POLL_MS = 50;

/** The processes started with HERD_SESSION_ID=<sessionId> (none where /proc cannot be read; a zombie's environment reads empty). */
export function markedProcesses(sessionId: string): number[] {
  const mark = `\0HERD_SESSION_ID=${sessionId}\0`;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    if (!/^\d+$/.test(name)) return [];
    try {
      return `\0${readFileSync(`/proc/${name}/environ`, "latin1")}`.includes(mark) ? [Number(name)] : [];
    } catch {
      return []; // gone meanwhile, or another user's
    }
  });
}

/** Ends the worker's processes: those marked with its session id and, given its pane's pid, the pane's process group. */
export async function endWorkerProcesses(sessionId: string, panePid: number | null): Promise<void> {
  const group = panePid ? [-panePid] : [];
  const marked = () => markedProcesses(sessionId);
  for (const pid of [...group, ...marked()]) signal(pid, "SIGTERM");
  for (let waited = 0; waited < GRACE_MS && marked().length; waited += POLL_MS) await Bun.sleep(POLL_MS);
  for (const pid of [...group, ...marked()]) signal(pid, "SIGKILL");
  // Gone, not only signalled: what herd removes after this (the worker's folder) must not be written again.
  const left = () => marked().length > 0 || group.some(isRunning);
  for (let waited = 0; waited < GRACE_MS && left(); waited += POLL_MS) await Bun.sleep(POLL_MS);
}

/** Whether a process (a group, for a negative pid) exists, a zombie too (EPERM: it does, another user's). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}
