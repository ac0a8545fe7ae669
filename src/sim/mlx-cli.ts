// A simulated mlx_lm.server as a process, with a stock mlx_lm.server's command
// line (mlx-args.ts): what `herd sim --mlx` has its node agent supervise, exactly
// as it supervises the real one. herd's own first argument, `--mlx-lm-version V`,
// picks the release it behaves as.
import type { Faults } from "./faults.ts";
import { type SimNode, startSimMlx } from "./index.ts";
import { type MlxServerArgs, parseMlxServerArgs } from "./mlx-args.ts";
import { loadFailure, loadTraceback, type PythonException } from "./mlx-load.ts";
import { DEFAULT_MLX_LM_VERSION, MLX_LM_VERSIONS, type MlxLmVersion } from "./mlx-versions.ts";

export interface MlxCommandLine {
  version: MlxLmVersion;
  args: MlxServerArgs;
}

/** The command line read; for --help, or a usage error, it prints what argparse prints and ends the process (0, or 2). */
export function commandLineOrExit(argv: string[]): MlxCommandLine {
  const [version, rest] = argv[0] === "--mlx-lm-version" ? [argv[1] ?? "", argv.slice(2)] : [DEFAULT_MLX_LM_VERSION, argv];
  if (!(MLX_LM_VERSIONS as readonly string[]).includes(version)) {
    console.error(`herd sim-mlx-server: --mlx-lm-version: herd simulates mlx-lm ${MLX_LM_VERSIONS.join(" and ")}, not "${version}"`);
    process.exit(2);
  }
  const line = parseMlxServerArgs(rest);
  if ("help" in line) {
    process.stdout.write(line.help);
    process.exit(0);
  }
  if ("error" in line) {
    process.stderr.write(line.error);
    process.exit(2);
  }
  return { version: version as MlxLmVersion, args: line.args };
}

export interface MlxProcessBehaviour {
  faults?: Faults;
  /** How long the model takes to load. Default LOAD_MS. */
  loadMs?: number;
  /** Why the load fails; default: what loadFailure finds (a path that does not exist). null: it loads. */
  loadFails?: PythonException | null;
}

/** A simulated load: long enough to be seen ("loading"), short enough for a demo. */
const LOAD_MS = 1000;

/**
 * Loads the model and serves, in the order of `version`, until SIGTERM or SIGINT, or until the process that
 * started it is gone (no orphan outlives its supervisor). A failed load prints its traceback; through 0.31.2
 * it ends the process (exit 1) before it ever serves, from 0.31.3 the server goes on answering all but completions.
 */
export async function serveMlxProcess({ version, args }: MlxCommandLine, behaviour: MlxProcessBehaviour = {}): Promise<SimNode> {
  const fails = behaviour.loadFails === undefined ? loadFailure(args.model) : behaviour.loadFails;
  const loaded = Bun.sleep(behaviour.loadMs ?? LOAD_MS).then(() => {
    if (fails) throw fails;
  });
  // mlx_lm/server.py 0.31.2 main(): ModelProvider(args) loads before run() binds; its exception ends main().
  if (version === "0.31.2") {
    await loaded.catch(() => {
      process.stderr.write(loadTraceback(version, fails!));
      process.exit(1);
    });
  } else loaded.catch(() => process.stderr.write(loadTraceback(version, fails!)));
  const { host, port, model, maxTokens, promptCacheSize, prefillStepSize } = args;
  const server = await startSimMlx({ id: `mlx-${port}`, version, model, port, host, maxTokens, promptCacheSize, prefillStepSize, loaded, faults: behaviour.faults });
  // mlx_lm/server.py 0.32.0 _run_http_server logs this once bound (logging's default format is left out).
  console.error(`Starting httpd at ${host} on port ${server.port}...`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 250).unref();
  return server;
}

/** `herd sim-mlx-server [--mlx-lm-version V] ARGS`. */
export async function runSimMlxServer(argv: string[]): Promise<number> {
  await serveMlxProcess(commandLineOrExit(argv));
  return new Promise(() => {}); // until a signal ends the process
}
