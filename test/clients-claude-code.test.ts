// Claude Code itself (the pinned native binary) against a router process over
// a simulated node, as a user runs it non-interactively: `claude -p` with JSON
// and stream-json output, a Bash tool loop, and an MCP tool it defers behind
// tool search (its default) and loads with ToolSearch. Each run has a fresh
// HOME and working directory, an environment built from nothing (no inherited
// ANTHROPIC_* or CLAUDE* variable), telemetry, updates, error reports and
// nonessential traffic off, a proxy that goes nowhere for anything not on
// loopback, and a deadline. A recording proxy in front of the router keeps
// every request Claude Code sends, so a test can say what it sent and what
// herd answered.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { ROOT, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const CLAUDE = join(ROOT, "node_modules/.bin/claude");
const RUN_MS = 45_000;
const TEST_MS = 60_000;
// Nothing listens on the discard port: a request that is not for loopback fails at once.
const NOWHERE = "http://127.0.0.1:9";

interface Exchange {
  path: string;
  body: any;
  status: number;
}

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let recorder: ReturnType<typeof recordingProxy>;

beforeAll(async () => {
  // Claude Code asks for claude-opus-*: the large tier, where a reasoning model that calls tools (qwen3:8b) comes first.
  const models = ["qwen3:8b", "llama3.2:3b"];
  sim = await startSimOllama({ id: "mac", models, loaded: models });
  const dir = tmpDir();
  const config = join(dir, "herd.config.ts");
  writeFileSync(config, `export default { nodes: [{ id: "mac", ollama: "${sim.url}" }] };\n`);
  router = await startRouterProcess(["serve", "--config", config, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 5000, "the node online");
  recorder = recordingProxy(router.url);
});

afterAll(async () => {
  await recorder?.server.stop(true);
  await sim?.stop();
});

/** Forwards to the router and keeps each request's body and the status herd answered it with. */
function recordingProxy(target: string) {
  const exchanges: Exchange[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const text = request.method === "GET" ? undefined : await request.text();
      const res = await fetch(`${target}${url.pathname}${url.search}`, { method: request.method, headers: request.headers, body: text });
      exchanges.push({ path: url.pathname, body: text ? JSON.parse(text) : null, status: res.status });
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      headers.delete("content-encoding");
      return new Response(res.body, { status: res.status, headers });
    },
  });
  return { server, url: `http://127.0.0.1:${server.port}`, exchanges };
}

interface Run {
  args: string[];
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** What this run sent to /v1/messages, in order. */
  requests: Exchange[];
}

async function claude(args: string[], cwd = tmpDir()): Promise<Run> {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpDir(),
    ANTHROPIC_BASE_URL: recorder.url,
    ANTHROPIC_API_KEY: "sk-test",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    HTTP_PROXY: NOWHERE,
    HTTPS_PROXY: NOWHERE,
    NO_PROXY: "127.0.0.1,localhost",
  };
  const from = recorder.exchanges.length;
  const proc = Bun.spawn([CLAUDE, ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, RUN_MS);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { args, code: timedOut ? null : code, timedOut, stdout, stderr, requests: recorder.exchanges.slice(from).filter((e) => e.path === "/v1/messages") };
  } finally {
    clearTimeout(timer);
    proc.kill("SIGKILL");
  }
}

const tail = (text: string, n = 4000) => (text.length > n ? `…${text.slice(-n)}` : text);

/** Everything needed to see what broke: Claude Code's output, what it sent and got, and herd's log. */
function report(run: Run): string {
  const requests = run.requests.map((r, i) => `  #${i + 1} → HTTP ${r.status}: roles ${r.body?.messages?.map((m: any) => m.role).join(",")}; tools ${r.body?.tools?.map((t: any) => t.name + (t.defer_loading ? " (deferred)" : "")).join(", ")}`);
  return [
    `claude ${run.args.map((a) => JSON.stringify(a)).join(" ")}: ${run.timedOut ? `killed after ${RUN_MS} ms` : `exit ${run.code}`}`,
    `stdout:\n${tail(run.stdout)}`,
    `stderr:\n${tail(run.stderr)}`,
    `requests to /v1/messages:\n${requests.join("\n") || "  none"}`,
    `herd's output:\n${tail(router.output(), 3000)}`,
  ].join("\n\n");
}

function check(ok: unknown, what: string, run: Run): void {
  if (!ok) throw new Error(`${what}\n\n${report(run)}`);
}

/** The run succeeded and herd answered every request Claude Code sent with 200 (a refusal makes it retry with fewer betas). */
function succeeded(run: Run): void {
  check(!run.timedOut && run.code === 0, "Claude Code did not exit 0", run);
  check(run.requests.length > 0, "Claude Code sent no request to /v1/messages", run);
  const refused = run.requests.find((r) => r.status !== 200);
  check(!refused, `herd answered a request with HTTP ${refused?.status}`, run);
}

function resultOf(run: Run): any {
  try {
    return JSON.parse(run.stdout);
  } catch {
    check(false, "stdout is not one JSON object", run);
  }
}

/** The tool_result blocks of a request's last message. */
function toolResults(request: Exchange): any[] {
  const content = request.body.messages.at(-1)?.content;
  return Array.isArray(content) ? content.filter((b) => b.type === "tool_result") : [];
}

describe("Claude Code", () => {
  test(
    "claude -p hello --output-format json: exit 0, no error, an answer",
    async () => {
      const run = await claude(["-p", "hello", "--output-format", "json"]);
      succeeded(run);
      const result = resultOf(run);
      check(result.is_error === false && result.subtype === "success", `the result is an error: ${result.result}`, run);
      check(typeof result.result === "string" && result.result.trim(), "the result has no text", run);
      expect(result.num_turns).toBe(1);
    },
    TEST_MS,
  );

  test(
    "--output-format stream-json --verbose: every line an event, the answer's text in an assistant event, a result event last",
    async () => {
      const run = await claude(["-p", "Tell me about queues", "--output-format", "stream-json", "--verbose"]);
      succeeded(run);
      const events = run.stdout
        .trim()
        .split("\n")
        .map((line) => {
          try {
            return JSON.parse(line);
          } catch {
            check(false, `not a JSON event: ${line}`, run);
          }
        });
      check(events[0]?.type === "system" && events[0].subtype === "init", "the first event is not system/init", run);
      const texts = events.filter((e) => e.type === "assistant").flatMap((e) => e.message.content.filter((b: any) => b.type === "text").map((b: any) => b.text));
      const last = events.at(-1);
      check(last?.type === "result" && last.is_error === false && last.result, "the last event is not a successful result", run);
      check(texts.join("").trim() && texts.join("") === last.result, "no assistant event carries the answer's text", run);
    },
    TEST_MS,
  );

  test(
    "a Bash tool loop: the command runs, its tool_result goes back to herd, and the model's final answer ends the run",
    async () => {
      const cwd = tmpDir();
      const run = await claude(["-p", 'sim: call Bash {"command":"echo herd-tool-ok > out.txt"}', "--allowedTools", "Bash", "--output-format", "json"], cwd);
      succeeded(run);
      const out = join(cwd, "out.txt");
      check(existsSync(out) && readFileSync(out, "utf8") === "herd-tool-ok\n", "Bash did not write out.txt", run);
      const answered = run.requests.flatMap(toolResults);
      check(answered.length === 1 && answered[0].is_error === false, "Claude Code did not send the Bash tool_result back", run);
      const result = resultOf(run);
      check(result.is_error === false && result.num_turns === 2 && result.result.trim(), "no final answer after the tool result", run);
    },
    TEST_MS,
  );

  test(
    "tool search (the default) with an MCP tool: deferred, loaded by ToolSearch's tool_reference, then called",
    async () => {
      const cwd = tmpDir();
      const marker = join(cwd, "marker.txt");
      const config = join(cwd, "mcp.json");
      writeFileSync(config, JSON.stringify({ mcpServers: { marker: { type: "stdio", command: process.execPath, args: [join(ROOT, "test/fixtures/mcp-marker-server.ts")] } } }));
      const tool = "mcp__marker__write_marker";
      const prompt = `sim: call ToolSearch {"query":"select:${tool}"}\nsim: call ${tool} ${JSON.stringify({ path: marker, text: "herd-mcp-ok" })}`;
      const run = await claude(["-p", prompt, "--mcp-config", config, "--strict-mcp-config", "--allowedTools", tool, "--output-format", "json"], cwd);
      succeeded(run);
      const [first, ...later] = run.requests;
      // Deferred: named in the first request (its system message lists the deferred tools) but not defined there.
      check(!first!.body.tools.some((t: any) => t.name === tool) && JSON.stringify(first!.body.messages).includes(tool), `the first request did not defer ${tool}`, run);
      const loaded = later.find((r) => toolResults(r).some((b) => Array.isArray(b.content) && b.content.some((c: any) => c.type === "tool_reference" && c.tool_name === tool)));
      check(loaded, `no tool_result with a tool_reference to ${tool} reached herd`, run);
      check(loaded!.body.tools.some((t: any) => t.name === tool && t.defer_loading === true), `${tool} was not sent with defer_loading`, run);
      check(existsSync(marker) && readFileSync(marker, "utf8") === "herd-mcp-ok", `the MCP tool did not run (a "not among the tools offered" answer means herd left it out)`, run);
      const result = resultOf(run);
      check(result.is_error === false && result.num_turns === 3, "the run did not end after ToolSearch, the MCP call and a final answer", run);
    },
    TEST_MS,
  );
});
