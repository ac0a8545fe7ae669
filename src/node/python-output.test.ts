// The readers of a Python program's output, on what Python itself printed (test/fixtures/mlx-lm/SOURCES.md).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { argparseOptions, PythonStderr } from "./python-output.ts";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "../../test/fixtures/mlx-lm", name), "utf8");

const STOCK_0_32 = [
  "--model", "--adapter-path", "--host", "--port", "--allowed-origins", "--draft-model", "--num-draft-tokens", "--trust-remote-code",
  "--log-level", "--chat-template", "--use-default-chat-template", "--temp", "--top-p", "--top-k", "--min-p", "--max-tokens",
  "--chat-template-args", "--decode-concurrency", "--prompt-concurrency", "--prefill-step-size", "--prompt-cache-size", "--prompt-cache-bytes", "--pipeline",
];

test("argparse's --help: every long option, with or without help texts (wrapped, or on the line after a long invocation)", () => {
  expect([...argparseOptions(fixture("help-0.32.0.txt"))]).toEqual(["--help", ...STOCK_0_32]);
  expect([...argparseOptions(fixture("help-with-texts.txt"))]).toEqual(["--help", ...STOCK_0_32]);
  // Short forms (Python before 3.13 and since), colour (3.14 on a terminal); no option named in a help text or the usage.
  const help = "usage: x [-h] [--kv-bits KV_BITS]\n\noptions:\n  -m MODEL, --model MODEL\n                        unlike --kv-bits\n  -p, --port PORT\n  \x1b[1;34m--temp\x1b[0m TEMP\n";
  expect([...argparseOptions(help)]).toEqual(["--model", "--port", "--temp"]);
  expect(argparseOptions("command not found").size).toBe(0);
});

test("stderr's reason: the last traceback's exception line, not its message's last line; else the last line", () => {
  const read = (text: string) => {
    const stderr = new PythonStderr();
    for (const line of text.split("\n")) stderr.line(line);
    return stderr;
  };
  const main = read(fixture("main-traceback.txt"));
  expect(main.reason).toStartWith("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: ");
  expect(main.threadDied).toBe(false);
  const thread = read(fixture("thread-traceback.txt"));
  expect(thread.threadDied).toBe(true);
  expect(thread.reason).toStartWith("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.");
  expect(read(fixture("unrecognized-kv-bits.txt")).reason).toBe("mlx_lm.server: error: unrecognized arguments: --kv-bits 8");
  expect(read(`Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nRuntimeError: ${"x".repeat(400)}\n`).reason).toHaveLength(300);
});
