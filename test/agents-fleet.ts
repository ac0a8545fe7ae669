// What the agents tests share: a router with agent profiles that run the
// stand-in agent (test/fixtures/stand-in-agent.ts) in real tmux panes, and small
// clients for its REST and MCP faces. The fleet's tmux server is the router's
// own (socket herd-<port>); stop() kills it too, whatever the router did.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { eventually, ROOT, startRouterProcess, tmpDir } from "./helpers.ts";

export const PRIMARY = "primary-secret-0123456789";
export const ARCHITECT = "architect-secret-9876543210";
const STAND_IN = join(ROOT, "test/fixtures/stand-in-agent.ts");

export interface Said {
  status: number;
  body: any;
}

export interface Fleet {
  url: string;
  socket: string;
  dir: string;
  /** A REST call with a credential (the primary's by default; null for none). */
  call(method: string, path: string, opts?: { token?: string | null; body?: unknown }): Promise<Said>;
  /** What a stand-in wrote at start: its environment (credential included), argv and cwd. */
  standIn(sessionId: string): Promise<{ env: Record<string, string>; argv: string[]; cwd: string }>;
  tmux(args: string[]): Promise<{ code: number; out: string }>;
  /** Stops the router alone, as a user would (SIGTERM). */
  stopRouter(): Promise<number>;
  /** Stops the router, then kills the fleet's tmux server in case the router could not. */
  stop(): Promise<void>;
  /** Kills the router (SIGKILL, no shutdown) and starts another on the same config and data dir, on a new port. */
  crash(): Promise<Fleet>;
}

/** Profiles: "stand-in" (REST, the default), "stand-in-mcp" (--mcp), "single" (capacity 1), "leaky" (a provider key in reach). */
/** The herd key workers get (auth.clients "workers", the profiles' clientKey). */
export const WORKERS_KEY = "hk-workers-key-1234";

/** `profiles`: more entries of agents.profiles, as config source text; `clients`: more auth.clients entries, the same way; `agents`: more fields of agents; `env`: more of the router's environment. */
export async function startFleet(opts: { nodes?: string; profiles?: string; clients?: string; agents?: string; env?: Record<string, string> } = {}): Promise<Fleet> {
  const dir = tmpDir();
  const standIns = join(dir, "stand-ins");
  mkdirSync(standIns);
  writeFileSync(join(dir, "architect.token"), `${ARCHITECT}\n`);
  const profile = (args: string[], env: string[], capacity = 8) => JSON.stringify({ command: process.execPath, args: [STAND_IN, ...args], env, capacity, clientKey: "workers" });
  // The allow-list asks for variables herd must refuse: TMUX (pane control) and the primary's secret.
  const allow = ["PATH", "HOME", "STAND_IN_DIR", "NOT_A_SECRET", "TMUX", "TEST_PRIMARY_TOKEN"];
  writeFileSync(
    join(dir, "herd.config.ts"),
    `export default {
  ${opts.nodes ?? ""}
  // The herd needs client keys: workers call its models with the key their profile names.
  auth: { clients: [{ name: "workers", key: "${WORKERS_KEY}" }, ${opts.clients ?? ""}] },
  agents: {
    profiles: {
      "stand-in": ${profile([], allow)},
      "stand-in-mcp": ${profile(["--mcp"], allow)},
      single: ${profile([], ["PATH", "STAND_IN_DIR"], 1)},
      leaky: ${profile([], ["PATH", "STAND_IN_DIR", "ANTHROPIC_API_KEY"])},
      ${opts.profiles ?? ""}
    },
    defaultProfile: "stand-in",
    ${opts.agents ?? ""}
    credentials: { primary: { env: "TEST_PRIMARY_TOKEN" }, architect: { file: "architect.token" } },
  },
};\n`,
  );
  const env = {
    TEST_PRIMARY_TOKEN: PRIMARY,
    STAND_IN_DIR: standIns,
    NOT_A_SECRET: "visible",
    SECRET_NOT_LISTED: "hidden",
    ANTHROPIC_API_KEY: "sk-ant-not-for-workers",
    TMUX: "/tmp/not-the-fleet,1,0",
    ...opts.env,
  };
  return launch(dir, standIns, env);
}

async function launch(dir: string, standIns: string, env: Record<string, string>): Promise<Fleet> {
  const router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { env });
  const socket = `herd-${new URL(router.url).port}`;
  const tmux = async (args: string[]) => {
    const proc = Bun.spawn(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH! } });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, out: out + err };
  };
  return {
    url: router.url,
    socket,
    dir,
    async call(method, path, { token = PRIMARY, body } = {}) {
      const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await fetch(`${router.url}${path}`, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text && res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text };
    },
    standIn: (sessionId) => {
      const file = join(standIns, `${sessionId}.json`);
      return eventually(async () => existsSync(file) && JSON.parse(readFileSync(file, "utf8")), 10_000, `stand-in ${sessionId} to start`);
    },
    tmux,
    stopRouter: () => router.stop(),
    async stop() {
      await router.stop();
      await tmux(["kill-server"]); // in case the router could not
      rmSync(join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid!()}`, socket), { force: true });
    },
    async crash() {
      await router.stop("SIGKILL");
      return launch(dir, standIns, env);
    },
  };
}

/** An MCP client connected with `token`; tools answer {status (the HTTP status REST gives), body}. */
export async function mcpClient(url: string, token: string) {
  const client = new Client({ name: "herd-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return {
    client,
    async tool(name: string, args: Record<string, unknown> = {}): Promise<Said & { isError: boolean }> {
      const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 130_000 });
      return { status: (r._meta as any)["herd/status"], body: r.structuredContent, isError: r.isError === true };
    },
    close: () => client.close(),
  };
}
