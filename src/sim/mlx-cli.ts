// A simulated mlx_lm.server as a process, with mlx_lm.server's command line
// (--model, --port, --host and the options herd passes): what `herd sim --mlx`
// has its node agent supervise, exactly as it supervises the real one.
import { parseArgs } from "node:util";
import type { Faults } from "./faults.ts";
import { type SimNode, startSimMlx } from "./index.ts";

export interface MlxServerArgs {
  model: string;
  port: number;
  host: string;
}

/** mlx_lm.server's arguments; anything else is a usage error, said the way argparse says it. */
export function parseMlxServerArgs(argv: string[]): MlxServerArgs | string {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        model: { type: "string" },
        port: { type: "string", default: "8080" },
        host: { type: "string", default: "127.0.0.1" },
        "kv-bits": { type: "string" },
        "prompt-cache-size": { type: "string" },
        "prompt-cache-bytes": { type: "string" },
        "draft-model": { type: "string" },
      },
      strict: true,
    });
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) return `argument --port: invalid int value: '${values.port}'`;
    // mlx_lm.server may start without a model (one per request); the simulation needs one to answer as.
    if (!values.model) return "the following arguments are required: --model";
    return { model: values.model, port, host: values.host };
  } catch (e) {
    return (e as Error).message.replace(/\. To specify.*$/s, "");
  }
}

/** Serves until SIGTERM or SIGINT, or until the process that started it is gone (no orphan outlives its supervisor). */
export async function serveMlxProcess(args: MlxServerArgs, faults: Faults = {}): Promise<SimNode> {
  const server = await startSimMlx({ id: `mlx-${args.port}`, model: args.model, port: args.port, host: args.host, faults });
  console.error(`Starting httpd at ${args.host} on port ${server.port}...`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 250).unref();
  return server;
}

/** `herd sim-mlx-server ARGS`: exit code 2 with a usage line on bad arguments, as mlx_lm.server. */
export async function runSimMlxServer(argv: string[]): Promise<number> {
  const args = parseMlxServerArgs(argv);
  if (typeof args === "string") {
    console.error(`usage: herd sim-mlx-server --model MODEL [--host HOST] [--port PORT]\nherd sim-mlx-server: error: ${args}`);
    return 2;
  }
  await serveMlxProcess(args);
  return new Promise(() => {}); // until a signal ends the process
}
