// mlx_lm.server's command line as stock mlx-lm has it, read and printed the way
// Python's argparse does: its usage line wrapped at 80 columns, its help's option
// list, and its errors (exit 2). The option help texts are mlx-lm's own words and
// are not repeated here; the options, their metavars and the layout are facts.

type Kind = "str" | "int" | "float" | "flag" | "json" | "size" | "choice";

interface Option {
  name: string;
  kind: Kind;
  choices?: string[];
}

// mlx_lm/server.py 0.32.0 main(): the same options, in the same order, as 0.31.2's (there is no --kv-bits in any release).
const OPTIONS: Option[] = [
  { name: "--model", kind: "str" },
  { name: "--adapter-path", kind: "str" },
  { name: "--host", kind: "str" },
  { name: "--port", kind: "int" },
  { name: "--allowed-origins", kind: "str" },
  { name: "--draft-model", kind: "str" },
  { name: "--num-draft-tokens", kind: "int" },
  { name: "--trust-remote-code", kind: "flag" },
  { name: "--log-level", kind: "choice", choices: ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] },
  { name: "--chat-template", kind: "str" },
  { name: "--use-default-chat-template", kind: "flag" },
  { name: "--temp", kind: "float" },
  { name: "--top-p", kind: "float" },
  { name: "--top-k", kind: "int" },
  { name: "--min-p", kind: "float" },
  { name: "--max-tokens", kind: "int" },
  { name: "--chat-template-args", kind: "json" },
  { name: "--decode-concurrency", kind: "int" },
  { name: "--prompt-concurrency", kind: "int" },
  { name: "--prefill-step-size", kind: "int" },
  { name: "--prompt-cache-size", kind: "int" },
  { name: "--prompt-cache-bytes", kind: "size" },
  { name: "--pipeline", kind: "flag" },
];

/** What the simulation reads of the command line. */
export interface MlxServerArgs {
  model: string;
  host: string;
  port: number;
  /** The cap on a reply that sets none of its own. */
  maxTokens: number;
  promptCacheSize: number;
  prefillStepSize: number;
}

// mlx_lm/server.py 0.32.0 main(): the defaults.
const DEFAULTS: Record<string, string | number | boolean> = { "--host": "127.0.0.1", "--port": 8080, "--max-tokens": 512, "--prompt-cache-size": 10, "--prefill-step-size": 2048 };

export type CommandLine = { args: MlxServerArgs } | { help: string } | { error: string };

/** argparse's reading of `argv`: the arguments, the help it prints for -h, or the usage error it prints before it exits 2. */
export function parseMlxServerArgs(argv: string[]): CommandLine {
  const values = { ...DEFAULTS };
  const unrecognized: string[] = [];
  const fail = (message: string) => ({ error: `${usage()}mlx_lm.server: error: ${message}\n` });
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    // argparse acts on -h where it meets it: what follows is never read.
    if (arg === "-h" || arg === "--help") return { help: help() };
    if (!arg.startsWith("--")) {
      unrecognized.push(arg); // mlx_lm.server takes no positional arguments
      continue;
    }
    const [written, inline] = splitInline(arg);
    // argparse takes a unique prefix of a long option for the option (allow_abbrev).
    const matches = OPTIONS.filter((o) => o.name === written).length ? OPTIONS.filter((o) => o.name === written) : OPTIONS.filter((o) => o.name.startsWith(written));
    if (matches.length > 1) return fail(`ambiguous option: ${written} could match ${matches.map((o) => o.name).join(", ")}`);
    const option = matches[0];
    if (!option) {
      unrecognized.push(arg);
      continue;
    }
    if (option.kind === "flag") {
      if (inline !== undefined) return fail(`argument ${option.name}: ignored explicit argument '${inline}'`);
      values[option.name] = true;
      continue;
    }
    const raw = inline ?? argv[i + 1];
    if (raw === undefined || (inline === undefined && raw.startsWith("-") && !/^-\d/.test(raw))) return fail(`argument ${option.name}: expected one argument`);
    if (inline === undefined) i++;
    const value = convert(option, raw);
    if (value === null) {
      if (option.kind === "choice") return fail(`argument ${option.name}: invalid choice: '${raw}' (choose from ${option.choices!.map((c) => `'${c}'`).join(", ")})`);
      return fail(`argument ${option.name}: invalid ${TYPE_NAME[option.kind]} value: '${raw}'`);
    }
    values[option.name] = value;
  }
  if (unrecognized.length) return fail(`unrecognized arguments: ${unrecognized.join(" ")}`);
  // mlx_lm.server starts without a model (it then loads one per request); the simulation needs one to answer as.
  if (typeof values["--model"] !== "string") return fail("the following arguments are required: --model");
  return {
    args: {
      model: values["--model"],
      host: String(values["--host"]),
      port: Number(values["--port"]),
      maxTokens: Number(values["--max-tokens"]),
      promptCacheSize: Number(values["--prompt-cache-size"]),
      prefillStepSize: Number(values["--prefill-step-size"]),
    },
  };
}

// The name argparse gives a type in "invalid <type> value": the type function's __name__.
const TYPE_NAME: Partial<Record<Kind, string>> = { int: "int", float: "float", json: "loads", size: "_parse_size" };

function splitInline(arg: string): [string, string | undefined] {
  const eq = arg.indexOf("=");
  return eq < 0 ? [arg, undefined] : [arg.slice(0, eq), arg.slice(eq + 1)];
}

function convert(option: Option, raw: string): string | number | null {
  switch (option.kind) {
    case "int":
      return /^\s*[-+]?\d+\s*$/.test(raw) ? Number(raw) : null;
    case "float":
      return raw.trim() !== "" && Number.isFinite(Number(raw)) ? Number(raw) : null;
    case "json":
      try {
        JSON.parse(raw);
        return raw;
      } catch {
        return null;
      }
    case "size": // mlx_lm/utils.py 0.32.0 _parse_size: digits, then "", M, G, MB or GB
      return /^[\d.]+\s*(M|G|MB|GB)?\s*$/i.test(raw) ? raw : null;
    case "choice":
      return option.choices!.includes(raw) ? raw : null;
    default:
      return raw;
  }
}

const metavar = (o: Option) => (o.kind === "flag" ? "" : o.kind === "choice" ? `{${o.choices!.join(",")}}` : o.name.slice(2).replaceAll("-", "_").toUpperCase());
const invocation = (o: Option) => [o.name, metavar(o)].filter(Boolean).join(" ");

/** Lib/argparse.py (3.11) HelpFormatter._format_usage: the parts after the program's name, wrapped to 78 columns (80, less 2: its width when not on a terminal). */
function usage(): string {
  const prefix = "usage: ";
  const prog = "mlx_lm.server";
  const width = 78;
  const indent = " ".repeat(prefix.length + prog.length + 1);
  const lines: string[] = [];
  let line: string[] = [];
  let length = prefix.length - 1;
  for (const part of [prog, "[-h]", ...OPTIONS.map((o) => `[${invocation(o)}]`)]) {
    if (length + 1 + part.length > width && line.length) {
      lines.push(line.join(" "));
      line = [];
      length = indent.length - 1;
    }
    line.push(part);
    length += part.length + 1;
  }
  lines.push(line.join(" "));
  return `${prefix}${lines.join(`\n${indent}`)}\n`;
}

/** argparse's --help: the usage, then the options (with no help texts of their own here). */
function help(): string {
  return `${usage()}\noptions:\n  -h, --help            show this help message and exit\n${OPTIONS.map((o) => `  ${invocation(o)}\n`).join("")}`;
}
