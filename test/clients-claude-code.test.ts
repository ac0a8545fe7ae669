// Claude Code itself (the pinned native binary) against a router process over
// a simulated node, as a user runs it non-interactively: `claude -p` with JSON
// and stream-json output, a Bash tool loop, and an MCP tool it defers behind
// tool search (its default) and loads with ToolSearch. Each run has a fresh
// HOME and working directory, an environment built from nothing (test/clients.ts:
// no inherited ANTHROPIC_* or CLAUDE* variable, a proxy trap for anything not on
// loopback), telemetry, updates, error reports and nonessential traffic off, and
// a deadline; a recorder in front of the router keeps every request it sends.
// The README's line is typed, as printed, into a shell in a terminal, and the
// Claude Code it opens answers a prompt from the herd.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, ROOT } from "./helpers.ts";
import { BIN, type ClientResult, type Exchange, clientScene, jsonLines, sseData, startClientFleet } from "./clients.ts";
import { atRouter, printed } from "./doc-commands.ts";

const RUN_MS = 45_000;
const TEST_MS = 60_000;

let url: string;
beforeAll(async () => {
  // Claude Code asks for claude-opus-*: the large tier, where a reasoning model that calls tools (qwen3:8b) comes first.
  const models = ["qwen3:8b", "llama3.2:3b"];
  ({ url } = await startClientFleet([{ id: "mac", models, loaded: models }]));
});

/** No telemetry, updates, error reports or other traffic to Anthropic's services. */
const QUIET = { DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", DISABLE_ERROR_REPORTING: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" };

interface Run extends ClientResult {
  /** What this run sent to /v1/messages, in order. */
  requests: Exchange[];
  /** The run's working directory. */
  work: string;
}

/** Runs `claude ARGS` in a fresh scene; ARGS may be made from the run's working directory (and put files there). */
async function claude(argsFor: string[] | ((work: string) => string[])): Promise<Run> {
  const scene = await clientScene(url);
  const args = typeof argsFor === "function" ? argsFor(scene.work) : argsFor;
  const env = { ANTHROPIC_BASE_URL: scene.url, ANTHROPIC_API_KEY: "sk-test", ...QUIET };
  const run = await scene.run([join(BIN, "claude"), ...args], { env, timeoutMs: RUN_MS });
  return { ...run, requests: run.exchanges.filter((e) => e.path.startsWith("/v1/messages")), work: scene.work };
}

/** The requests Claude Code sent, with the roles and tools of each: what a failure most often needs. */
function sent(run: Run): string {
  const lines = run.requests.map((r, i) => `  #${i + 1} → HTTP ${r.status}: roles ${r.body?.messages?.map((m: any) => m.role).join(",")}; tools ${r.body?.tools?.map((t: any) => t.name + (t.defer_loading ? " (deferred)" : "")).join(", ")}`);
  return `requests to /v1/messages:\n${lines.join("\n") || "  none"}`;
}

function check(ok: unknown, what: string, run: Run): void {
  if (!ok) throw new Error(run.why(`${what}\n${sent(run)}`));
}

/** The run succeeded and herd answered every request Claude Code sent with 200 (a refusal makes it retry with fewer betas). */
function succeeded(run: Run): void {
  check(!run.timedOut && run.code === 0, "Claude Code did not exit 0", run);
  check(run.requests.length > 0, "Claude Code sent no request to /v1/messages", run);
  const refused = run.requests.find((r) => r.status !== 200);
  check(!refused, `herd answered a request with HTTP ${refused?.status}`, run);
  check(run.outside.length === 0, "Claude Code reached for something outside loopback", run);
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
      const events = jsonLines(run, "stream-json");
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
      const run = await claude(["-p", 'sim: call Bash {"command":"echo herd-tool-ok > out.txt"}', "--allowedTools", "Bash", "--output-format", "json"]);
      succeeded(run);
      const out = join(run.work, "out.txt");
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
      const tool = "mcp__marker__write_marker";
      const run = await claude((work) => {
        const config = join(work, "mcp.json");
        writeFileSync(config, JSON.stringify({ mcpServers: { marker: { type: "stdio", command: process.execPath, args: [join(ROOT, "test/fixtures/mcp-marker-server.ts")] } } }));
        const prompt = `sim: call ToolSearch {"query":"select:${tool}"}\nsim: call ${tool} ${JSON.stringify({ path: join(work, "marker.txt"), text: "herd-mcp-ok" })}`;
        return ["-p", prompt, "--mcp-config", config, "--strict-mcp-config", "--allowedTools", tool, "--output-format", "json"];
      });
      const marker = join(run.work, "marker.txt");
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

describe("the README's Claude Code line", () => {
  test(
    "typed into a shell as printed: Claude Code opens logged in to the herd, and a prompt is answered from it",
    async () => {
      const line = printed("README.md", /\bclaude$/);
      expect(printed("docs/anthropic.md", /\bclaude$/)).toBe(line);
      const scene = await clientScene(url);
      // A machine where Claude Code ran before: onboarding done, this folder trusted (its first-run screens are its own).
      mkdirSync(scene.home, { recursive: true });
      writeFileSync(join(scene.home, ".claude.json"), JSON.stringify({ hasCompletedOnboarding: true, projects: { [scene.work]: { hasTrustDialogAccepted: true } } }));
      const terminal = await scene.terminal(QUIET);
      await terminal.type(atRouter(line, scene.url));
      await terminal.press("Enter");
      await terminal.waitFor(/─{20,}\n❯/);
      // Typed, and seen in its input box, before it is sent: keys that come while Claude Code starts may be lost.
      const prompt = "Tell me about queues";
      await terminal.type(prompt);
      await terminal.waitFor(new RegExp(`❯\\s${prompt}`), 10_000); // its prompt mark and a no-break space
      await terminal.press("Enter");
      // The turn itself, not the title Claude Code asks for beside it: the request with its tools.
      const turn = async () => (await scene.exchanges()).find((e) => e.path.startsWith("/v1/messages") && e.body?.tools?.length && JSON.stringify(e.body.messages).includes(prompt));
      const asked = await eventually(turn, 30_000, "the turn at herd").catch(async (e) => expect.unreachable(`${e.message}; the terminal shows:\n${await terminal.screen()}`));
      expect(asked.status, await terminal.screen()).toBe(200);
      expect(await terminal.screen()).not.toContain("Not logged in");
      const text = sseData(asked.answer).flatMap((e) => (e.delta?.type === "text_delta" ? [e.delta.text] : [])).join("");
      await terminal.waitFor(new RegExp(RegExp.escape(text.slice(0, 40))));
    },
    TEST_MS,
  );
});
