#!/usr/bin/env bun
// herd's one entry point: `bun src/cli.ts …` from a checkout and the compiled
// `herd …` binary behave the same.
import { existsSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { Secret } from "./config/credentials/secrets.ts";
import { checkConfig } from "./commands/check-config.ts";
import { plan } from "./commands/plan.ts";
import { enroll, enrollmentSteps } from "./commands/enroll.ts";
import { init } from "./commands/init.ts";
import { SERVICE_ACTIONS, service } from "./commands/service.ts";
import { envNameProblem, MAX_NAMED } from "./commands/service-env.ts";
import { runNode, runRouter, runSim } from "./commands/run.ts";
import * as v from "valibot";
import { configJsonSchema } from "./config/json-schema.ts";
import { nodeId as nodeIdRule } from "./config/schema.ts";
import { NEWEST_OLLAMA, parseVersion } from "./fleet/ollama-releases.ts";
import { DEFAULT_MLX_LM_VERSION, MLX_LM_VERSIONS, type MlxLmVersion } from "./sim/mlx-versions.ts";
import { runSimMlxServer } from "./sim/mlx-cli.ts";
import { ConfigError, findConfig } from "./config/load.ts";
import { UserError } from "./errors.ts";
import { VERSION } from "./version.ts";

const COMMON = `
  --config FILE     herd.config.ts / .json / .yaml  (env HERD_CONFIG; default ./herd.config.*)
  --port N          router port                     (env HERD_PORT; default server.port, 11435)
  --host ADDR       router address                  (env HERD_HOST; default server.host, 127.0.0.1)
  --data-dir DIR    SQLite store and state          (env HERD_DATA_DIR; default server.dataDir, ~/.herd)
  -h, --help        this help
  -v, --version     print herd's version`;

const HELP: Record<string, string> = {
  herd: `herd ${VERSION}: one endpoint for the Ollama and MLX servers on all your Macs.

Usage: herd [command] [options]

Commands:
  (none)              router + a local node agent in one process: the single-Mac default
  serve               router only
  node                node agent only: reports this machine to a router
  node --enroll       make this node a credential and print what the config needs (docs/security.md)
  sim                 a demo fleet of simulated nodes behind a router
  init [DIR]          write a starter herd.config.ts with its types (herd.d.ts) and JSON Schema
  check-config FILE   validate a config; exit 1 with one line per problem
  plan [FILE]         what FILE would change on the running router; exit 0 none, 2 some, 1 invalid
  schema              print the config's JSON Schema
  service ACTION      install | uninstall | status: start herd at login or at boot (launchd, macOS)
  version             print herd's version (also --version)

Options:${COMMON}
  --node-id ID      this machine's node id (default: the host name)
  --ollama URL      the local Ollama (default: the node's config entry, else http://127.0.0.1:11434)

Run \`herd COMMAND --help\` for a command's options.`,
  serve: `Usage: herd serve [options]

Runs the router: clients talk to it; it routes each request to the best node.
Options:${COMMON}`,
  node: `Usage: herd node [--router URL] [--ollama URL] [--node-id ID] [--token-file FILE] [--config FILE]
       herd node --enroll [--node-id ID] [--token-file FILE]

Runs the node agent: every heartbeat interval it reports this machine and its Ollama to the router.
The agent reads its own entry (by node id) from the same config file as the router, and reloads it.
  --router URL      the router (env HERD_ROUTER; default http://127.0.0.1:11435)
  --ollama URL      the local Ollama (default: the node's config entry, else http://127.0.0.1:11434)
  --node-id ID      this node's id (env HERD_NODE_ID; default: the host name)
  --token-file FILE the node credential, read from FILE (env HERD_NODE_TOKEN holds the value itself;
                    default: this node's token in the config, else auth.nodeToken)
  --config FILE     the fleet's config (env HERD_CONFIG; default ./herd.config.*)
  --data-dir DIR    the agent's state, e.g. MLX servers' logs (env HERD_DATA_DIR; default server.dataDir)
  --enroll          instead of running: make this node's credential (in --token-file FILE, default
                    ~/.herd/nodes/ID.token, 0600; kept if it is there) and print the config entry and
                    the steps for the router's machine. Without one, a heartbeat cannot say where the
                    node's Ollama is nor take it out of service (open mode, docs/security.md)
  -h, --help        this help`,
  sim: `Usage: herd sim [--nodes N] [--base-port P] [--ollama-version V] [--no-router] [--mlx [--mlx-lm-version V]] [options]

Starts N simulated Ollama nodes (deterministic replies, realistic models and timings) and a
router in front of them that uses them as its nodes, each reported by a node agent over its
simulated Mac (memory, CPU, disk, thermal state). The config's other settings still apply.
Its store is its own (server.dataDir/sim, e.g. ~/.herd/sim) unless --data-dir says otherwise, so
demo traffic stays out of the real analytics.
  --nodes N         how many simulated nodes (default 3)
  --base-port P     first node's port; the others follow (default 11501; 0 = any free ports)
  --ollama-version V  the Ollama release the nodes behave as (default ${NEWEST_OLLAMA}, the newest herd
                    follows; e.g. 0.13.5 loads every model at 4096 tokens, 0.9.6 runs four at once)
  --no-router       only the simulated nodes, e.g. to point another herd at them
  --mlx             the first node also runs a simulated mlx_lm.server (port: after the nodes'),
                    started and health-checked by a node agent as on a Mac (\`herd sim-mlx-server\`)
  --mlx-lm-version V
                    the mlx-lm release it behaves as: ${MLX_LM_VERSIONS.join(" or ")} (default ${DEFAULT_MLX_LM_VERSION})
Options:${COMMON}`,
  init: `Usage: herd init [DIR] [--force]

Writes DIR/herd.config.ts (a starter fleet), DIR/herd.d.ts (its types, for your editor) and
DIR/herd.schema.json (for .json/.yaml configs). Never overwrites a config without --force.`,
  "check-config": `Usage: herd check-config FILE [--no-secrets]

Validates FILE as herd would load it. Prints a summary and exits 0, or one line per problem and exits 1.
  --no-secrets      check each secret's reference ({ env: "VAR" }, { file: "path" }) for its shape
                    without reading it, so CI can validate without the fleet's secrets`,
  plan: `Usage: herd plan [FILE] [--router URL] [--token-file FILE]

Validates FILE (default: --config, HERD_CONFIG, ./herd.config.*) and prints what applying it would change
on the running router: nodes added, removed or changed, client keys (names only), pins, the model map,
scoring and every other setting. Exits 0 when nothing would change, 2 when something would, 1 when FILE
is invalid or the router cannot be asked. The router's secrets are not read here, only their references.
  --router URL      the router (env HERD_ROUTER; default this machine at FILE's server.port:
                    http://127.0.0.1:11435 unless FILE sets another)
  --token-file FILE the router's admin token, read from FILE (env HERD_ADMIN_TOKEN holds the value itself;
                    none needed on the router's own machine when it has no auth.adminToken)`,
  schema: "Usage: herd schema\n\nPrints the JSON Schema of herd's config to stdout.",
  service: `Usage: herd service install|uninstall|status [--agent-only] [--daemon] [--env NAME]... [options]

Runs herd under launchd, restarted if it dies: the router with its local agent (label herd.router),
or with --agent-only the node agent alone (herd.node). install writes LABEL.plist with the flags
given here and loads it with launchctl; logs go to ~/Library/Logs/herd/LABEL.log. uninstall unloads
and removes it; status says whether it runs. Both find either kind:
  a LaunchAgent (the default): ~/Library/LaunchAgents, runs while you are logged in at the screen
  a LaunchDaemon (--daemon): /Library/LaunchDaemons, runs from boot as you, logged in or not:
                    for a Mac nobody logs into (a headless Mini or Studio); install asks sudo
  --agent-only      the node agent (\`herd node\`) instead of the router
  --daemon          install: the LaunchDaemon instead of the LaunchAgent
  --env NAME        keep this environment variable's value from this shell (repeatable); PATH and
                    the HF_* and OLLAMA_* ones are kept anyway, but for secrets (*TOKEN*, *KEY*,
                    *SECRET*, *PASSWORD*), which are kept only when named here
  --config FILE     the config the service runs (default ./herd.config.*; recorded as an absolute path)
  --router URL      --agent-only: the router (default http://127.0.0.1:11435)
  --node-id ID, --ollama URL, --token-file FILE, --data-dir DIR, --port N, --host ADDR
                    passed on to the service's command (see \`herd --help\`, \`herd node --help\`)
  --dry-run         install: print the plist instead of writing it (on any OS)`,
  version: "Usage: herd version\n\nPrints herd's version.",
};

const OPTIONS = {
  config: { type: "string" },
  port: { type: "string" },
  host: { type: "string" },
  "data-dir": { type: "string" },
  "node-id": { type: "string" },
  ollama: { type: "string" },
  router: { type: "string" },
  "token-file": { type: "string" },
  enroll: { type: "boolean" },
  nodes: { type: "string" },
  "base-port": { type: "string" },
  "no-router": { type: "boolean" },
  "ollama-version": { type: "string" },
  mlx: { type: "boolean" },
  "mlx-lm-version": { type: "string" },
  force: { type: "boolean" },
  "agent-only": { type: "boolean" },
  "dry-run": { type: "boolean" },
  daemon: { type: "boolean" },
  env: { type: "string", multiple: true },
  "no-secrets": { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

/** Which options each command accepts; anything else is a usage error, not silently ignored. */
const ACCEPTS: Record<string, (keyof typeof OPTIONS)[]> = {
  herd: ["config", "port", "host", "data-dir", "node-id", "ollama"],
  serve: ["config", "port", "host", "data-dir"],
  node: ["config", "data-dir", "node-id", "ollama", "router", "token-file", "enroll"],
  sim: ["config", "port", "host", "data-dir", "nodes", "base-port", "ollama-version", "no-router", "mlx", "mlx-lm-version"],
  init: ["force"],
  "check-config": ["no-secrets"],
  plan: ["config", "router", "token-file"],
  schema: [],
  version: [],
  service: ["config", "port", "host", "data-dir", "node-id", "ollama", "router", "token-file", "agent-only", "dry-run", "daemon", "env"],
};

/** How many arguments after the command each takes (init's DIR, check-config's and plan's FILE); more is a usage error. */
const POSITIONALS: Record<string, number> = { init: 1, "check-config": 1, plan: 1, service: 1 };

class UsageError extends Error {}

/** `herd sim`'s --mlx and --mlx-lm-version: the release its simulated mlx_lm.server behaves as, or null for none. */
function mlxLmVersion(mlx: boolean, value: string | undefined): MlxLmVersion | null {
  if (!mlx && value !== undefined) throw new UsageError("--mlx-lm-version is for the simulated mlx_lm.server: add --mlx");
  if (!mlx) return null;
  if (value === undefined) return DEFAULT_MLX_LM_VERSION;
  if (!(MLX_LM_VERSIONS as readonly string[]).includes(value)) throw new UsageError(`--mlx-lm-version: herd simulates mlx-lm ${MLX_LM_VERSIONS.join(" and ")}, not "${value}"`);
  return value as MlxLmVersion;
}

async function main(argv: string[]): Promise<number> {
  // A simulated mlx_lm.server takes mlx_lm.server's own arguments, not herd's.
  if (argv[0] === "sim-mlx-server") return runSimMlxServer(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    // One line: node's parser adds hints over several ("To specify an option argument …").
    throw new UsageError((e as Error).message.split("\n")[0]!.replace(/\. To specify.*$|\.$/, ""));
  }
  const { values, positionals } = parsed;
  const command = positionals[0] ?? "herd";
  if (command === "help" || command === "--help") return print(HELP.herd!);
  if (!(command in HELP)) throw new UsageError(`unknown command "${command}"`);
  if (values.help) return print(HELP[command]!);
  if (values.version) return print(VERSION);
  for (const key of Object.keys(values) as (keyof typeof OPTIONS)[]) {
    if (key !== "help" && key !== "version" && !ACCEPTS[command]!.includes(key)) throw new UsageError(`herd ${command === "herd" ? "" : `${command} `}does not take --${key}`);
  }
  const extra = positionals.slice(command === "herd" ? 0 : 1 + (POSITIONALS[command] ?? 0));
  if (extra.length) throw new UsageError(`herd ${command === "herd" ? "" : `${command} `}does not take "${extra[0]}"`);
  const env = process.env;
  const configFlag = values.config ?? env.HERD_CONFIG;
  const overrides = {
    port: portValue("--port", values.port ?? env.HERD_PORT),
    host: values.host ?? env.HERD_HOST,
    dataDir: values["data-dir"] ?? env.HERD_DATA_DIR,
  };
  const nodeId = nodeIdValue(values["node-id"] !== undefined ? "--node-id" : "HERD_NODE_ID", values["node-id"] ?? env.HERD_NODE_ID) ?? hostname().replace(/\.local$/, "");

  switch (command) {
    case "version":
      return print(VERSION);
    case "schema":
      return print(JSON.stringify(configJsonSchema(), null, 2));
    case "init": {
      const dir = positionals[1] ?? ".";
      if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`init: ${dir} is not a directory; create it first`);
      for (const path of init(dir, values.force ?? false)) console.log(`wrote ${path}`);
      console.log("next: edit herd.config.ts, then run `herd`");
      return 0;
    }
    case "check-config": {
      const file = positionals[1] ?? configFlag;
      if (!file) throw new UsageError("check-config needs a FILE");
      return checkConfig(file, !values["no-secrets"]);
    }
    case "plan": {
      const file = positionals[1] ?? configFlag ?? findConfig(undefined);
      if (!file) throw new UsageError("plan needs a FILE (or --config, HERD_CONFIG, a ./herd.config.* here)");
      const routerUrl = values.router ?? env.HERD_ROUTER;
      if (routerUrl !== undefined && (!/^https?:\/\/[^\s/]+/.test(routerUrl) || !URL.canParse(routerUrl))) throw new UsageError(`--router: expected a URL like http://10.0.0.1:11435, got "${routerUrl}"`);
      return plan({ file, routerUrl, adminToken: secretOverride(values["token-file"], "HERD_ADMIN_TOKEN", env.HERD_ADMIN_TOKEN) });
    }
    case "node":
      if (values.enroll) return print(enrollmentSteps(nodeId, enroll(nodeId, values["token-file"])));
      return runNode({
        configFlag,
        nodeId,
        dataDir: overrides.dataDir,
        ollamaUrl: urlValue("--ollama", values.ollama),
        routerUrl: urlValue(values.router !== undefined ? "--router" : "HERD_ROUTER", values.router ?? env.HERD_ROUTER) ?? "http://127.0.0.1:11435",
        token: secretOverride(values["token-file"], "HERD_NODE_TOKEN", env.HERD_NODE_TOKEN),
      });
    case "sim":
      return runSim({
        configFlag,
        overrides,
        nodes: countValue("--nodes", values.nodes, 3),
        basePort: portValue("--base-port", values["base-port"]) ?? 11501,
        ollamaVersion: versionValue("--ollama-version", values["ollama-version"]) ?? NEWEST_OLLAMA,
        withRouter: !values["no-router"],
        mlx: mlxLmVersion(values.mlx ?? false, values["mlx-lm-version"]),
      });
    case "service": {
      const action = SERVICE_ACTIONS.find((a) => a === positionals[1]);
      if (!action) throw new UsageError(`service needs an action: ${SERVICE_ACTIONS.join(", ")}${positionals[1] ? `, got "${positionals[1]}"` : ""}`);
      const agentOnly = values["agent-only"] ?? false;
      const daemon = values.daemon ?? false;
      if (action !== "install" && (daemon || values.env)) throw new UsageError(`--${daemon ? "daemon" : "env"} is for install (${action} finds either kind)`);
      const options = () => {
        const config = findConfig(configFlag);
        if (!config) throw new UsageError("service install needs a config: pass --config FILE or run it where herd.config.* is");
        if (!existsSync(config)) throw new UsageError(`--config: no file ${config}`);
        const { router, ...rest } = { router: urlValue("--router", values.router), nodeId: values["node-id"], ollama: urlValue("--ollama", values.ollama), tokenFile: values["token-file"] };
        if (router && !agentOnly) throw new UsageError("--router is for --agent-only (the router's own agent needs none)");
        return { agentOnly, config: resolve(config), router, ...rest, dataDir: values["data-dir"], port: overrides.port, host: values.host, env: envNames(values.env ?? []) };
      };
      for (const line of service(action, { agentOnly, daemon, dryRun: values["dry-run"] ?? false }, options)) console.log(line);
      return 0;
    }
    case "serve":
      return runRouter({ configFlag, overrides, localAgent: null });
    default:
      return runRouter({ configFlag, overrides, localAgent: { nodeId, ollamaUrl: urlValue("--ollama", values.ollama) } });
  }
}

// Not a --token flag: a value on the command line is visible to every user of the machine in `ps`.
function secretOverride(file: string | undefined, envName: string, fromEnv: string | undefined): string | undefined {
  if (file === undefined && !fromEnv) return undefined;
  const secret = new Secret(file !== undefined ? { file } : fromEnv!);
  const problem = secret.resolve(process.cwd());
  if (problem) throw new UsageError(`${file !== undefined ? "--token-file" : envName}: ${problem}`);
  return secret.value!;
}

/** `herd service install --env NAME`…: each a variable set in this shell. */
function envNames(names: string[]): string[] {
  if (names.length > MAX_NAMED) throw new UsageError(`--env: at most ${MAX_NAMED} names, got ${names.length}`);
  for (const name of names) {
    const problem = envNameProblem(name, process.env);
    if (problem) throw new UsageError(`--env ${name.slice(0, 140)}: ${problem}`);
  }
  return names;
}

function print(text: string): number {
  console.log(text);
  return 0;
}

function portValue(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flag}: expected a port number 0-65535, got "${raw}"`);
  return n;
}

function versionValue(flag: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!parseVersion(raw) || raw.length > 32) throw new UsageError(`${flag}: expected an Ollama release such as ${NEWEST_OLLAMA}, got "${raw}"`);
  return raw;
}

// The rule the router holds heartbeats to: an agent with another id would run, but never be taken.
function nodeIdValue(flag: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const checked = v.safeParse(nodeIdRule, raw);
  if (!checked.success) throw new UsageError(`${flag}: ${checked.issues[0].message}, got "${raw}"`);
  return raw;
}

function urlValue(flag: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : null;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) throw new UsageError(`${flag}: expected a URL such as http://10.0.0.2:11435, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

function countValue(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new UsageError(`${flag}: expected a whole number 1-64, got "${raw}"`);
  return n;
}

try {
  const code = await main(process.argv.slice(2));
  // Done once main returns (a stop has written every trace and closed every server): nothing still pending,
  // such as an attempt to connect to a host that is off (which cannot be cancelled), may hold the process open.
  process.exit(code);
} catch (e) {
  if (e instanceof UsageError) {
    console.error(`herd: ${e.message}; see \`herd --help\``);
    process.exit(2);
  }
  if (e instanceof ConfigError) {
    console.error(`herd: invalid config ${e.file ?? ""}`);
    for (const p of e.problems) console.error(`  ${p}`);
    process.exit(1);
  }
  if (e instanceof UserError) {
    console.error(`herd: ${e.message}`);
    process.exit(1);
  }
  throw e;
}
