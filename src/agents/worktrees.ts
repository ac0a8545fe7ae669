// A worktree per ticket: a worker spawned for ticket T works in its own checkout
// of the repo it was pointed at, on branch herd/T, kept under
// <dataDir>/worktrees/<repo>/<T>. A second worker for the same ticket reuses it;
// stopping a worker leaves it (the work in it is the point).
import { existsSync } from "node:fs";
import { basename, join } from "node:path";

export const TICKET = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The cwd is no git repository: the caller's mistake (400). */
export class NotARepo extends Error {}

const GIT_TIMEOUT_MS = 30_000;

export async function worktreeFor(cwd: string, ticket: string, dataDir: string): Promise<{ path: string; branch: string }> {
  let root: string;
  try {
    root = (await git(cwd, ["rev-parse", "--show-toplevel"])).trim();
  } catch {
    throw new NotARepo(`cwd ${cwd} is not inside a git repository, so it has no worktrees`);
  }
  const path = join(dataDir, "worktrees", basename(root), ticket);
  const branch = `herd/${ticket}`;
  const listed = await git(root, ["worktree", "list", "--porcelain"]);
  if (existsSync(path) && listed.split("\n").includes(`worktree ${path}`)) return { path, branch };
  const hasBranch = await git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]).then(
    () => true,
    () => false,
  );
  await git(root, hasBranch ? ["worktree", "add", path, branch] : ["worktree", "add", "-b", branch, path]);
  return { path, branch };
}

async function git(cwd: string, args: string[]): Promise<string> {
  const proc = Bun.spawn(["git", ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: GIT_TIMEOUT_MS, killSignal: "SIGKILL" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (proc.signalCode === "SIGKILL") throw new Error(`git ${args.slice(0, 2).join(" ")} did not finish within ${GIT_TIMEOUT_MS} ms`);
  if (code !== 0) throw new Error(`git ${args.slice(0, 2).join(" ")} failed: ${err.trim() || `status ${code}`}`);
  return out;
}
