// `herd plan [FILE] [--router URL]`: what applying FILE would change on the running router, before it is
// applied; by default the router on this machine, at FILE's own server.port. Exit 0: nothing; 2: something would; 1: the file is invalid (ConfigError) or the router cannot say.
import { resolve } from "node:path";
import { loadConfig } from "../config/load.ts";
import { type Change, configChanges, effectiveView } from "../config/plan.ts";
import { UserError } from "../errors.ts";

export interface PlanOptions {
  file: string;
  /** --router or HERD_ROUTER; none: this machine, at FILE's server.port. */
  routerUrl?: string;
  /** The admin token (HERD_ADMIN_TOKEN, --token-file); none for a router without one, from its own machine. */
  adminToken?: string;
}

interface RunningConfig {
  hash: string;
  router_version: string;
  last_error: { message: string } | null;
  config: Record<string, unknown>;
}

const FETCH_TIMEOUT_MS = 10_000;

export async function plan(opts: PlanOptions): Promise<number> {
  // The router's secrets need not be readable here (CI, a laptop): their references are checked, not read.
  const { config, source } = await loadConfig(resolve(opts.file), { secrets: "unchecked" });
  const routerUrl = opts.routerUrl ?? `http://127.0.0.1:${config.server.port}`;
  const running = await fetchRunning(routerUrl, opts.adminToken);
  console.log(`plan: ${source.path} (hash ${source.hash}) against ${routerUrl} (hash ${running.hash}, herd ${running.router_version})`);
  if (running.last_error) console.log(`  note: the router's last reload was refused: ${running.last_error.message}`);
  const changes = configChanges(running.config, effectiveView(config));
  if (!changes.length) {
    console.log("no changes: the router runs this config");
    return 0;
  }
  for (const change of changes) console.log(`  ${line(change)}`);
  console.log(`${changes.length} change(s) when this file is applied`);
  return 2;
}

function line({ kind, what, detail }: Change): string {
  return `${kind} ${what}${detail ? (kind === "~" && what.includes(": ") ? ` (${detail})` : `: ${detail}`) : ""}`;
}

async function fetchRunning(routerUrl: string, adminToken: string | undefined): Promise<RunningConfig> {
  const url = new URL("/fleet/config", routerUrl);
  let res: Response;
  try {
    res = await fetch(url, { headers: adminToken ? { authorization: `Bearer ${adminToken}` } : {}, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (e) {
    throw new UserError(`cannot reach the router at ${routerUrl} (${(e as Error).message}); pass --router URL`);
  }
  const body = (await res.json().catch(() => null)) as (RunningConfig & { error?: string }) | null;
  if (!res.ok || !body?.config) {
    const why = body?.error ?? `HTTP ${res.status}`;
    const hint = res.status === 401 || res.status === 403 ? "; set HERD_ADMIN_TOKEN or pass --token-file FILE with the router's auth.adminToken" : "";
    throw new UserError(`the router at ${routerUrl} did not give its config: ${why}${hint}`);
  }
  return body;
}
