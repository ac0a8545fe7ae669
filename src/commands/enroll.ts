// `herd node --enroll`: a node credential in one command. It makes one for this node (or keeps the one it
// made before), in a file only its user can read, and prints what the config and the router's machine need.
// The path is written with `~`, so the same config entry finds the file on the node and on the router's Mac.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { UserError } from "../errors.ts";

export interface Enrolled {
  /** The file's path as the config should name it (`~/…` when under the home directory). */
  path: string;
  credential: string;
  created: boolean;
}

/** Makes (or keeps) `nodeId`'s credential in `file` (default ~/.herd/nodes/<id>.token). */
export function enroll(nodeId: string, file: string | undefined): Enrolled {
  const absolute = file === undefined ? resolve(homedir(), ".herd", "nodes", `${nodeId}.token`) : resolve(expandHome(file));
  const path = absolute.startsWith(`${homedir()}/`) ? `~/${absolute.slice(homedir().length + 1)}` : absolute;
  if (existsSync(absolute)) {
    const credential = readFileSync(absolute, "utf8").trim();
    if (!credential) throw new UserError(`${absolute} is empty; remove it, or put the node's credential in it`);
    chmodSync(absolute, 0o600);
    return { path, credential, created: false };
  }
  mkdirSync(dirname(absolute), { recursive: true, mode: 0o700 });
  const credential = randomBytes(32).toString("base64url");
  writeFileSync(absolute, `${credential}\n`, { mode: 0o600, flag: "wx" });
  return { path, credential, created: true };
}

/** What the operator does next, for `herd node --enroll` to print. */
export function enrollmentSteps(nodeId: string, { path, credential, created }: Enrolled): string {
  return `node credential for "${nodeId}" ${created ? "made in" : "kept in"} ${path} (readable by you only)

1. In herd.config.ts (the same file on every Mac), give the node its credential:
     { id: "${nodeId}", token: { file: "${path}" } }
   (the node's entry you have already: add the token field)
2. On the router's machine, put the same credential in ${path} (chmod 600), e.g.
     scp <this Mac>:${path} ${path}
   or paste it there; it is (keep it out of any file kept in git):
     ${credential}
3. Restart the agent here: herd node --node-id ${nodeId} --router http://<router>:11435
   It reads the credential from its entry (or: --token-file ${path}).

From then on the router takes "${nodeId}"'s heartbeats only with the credential (401 without it), and believes
what they say: where the node's Ollama is, what it holds, whether it is draining.`;
}

function expandHome(file: string): string {
  return file === "~" || file.startsWith("~/") ? resolve(homedir(), file.slice(2)) : file;
}
