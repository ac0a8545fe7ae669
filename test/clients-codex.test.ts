// The real Codex CLI (the pinned @openai/codex) against a router process over a
// simulated node: `codex exec` with herd as a Responses provider (a text turn;
// a shell tool loop whose command really runs) and `codex exec --oss` with herd
// as the local Ollama. Each run has a fresh home holding ~/.codex/config.toml,
// the scrubbed environment of clients.ts and a deadline; a recorder between
// Codex and herd keeps what each side said, and nothing outside loopback may be
// reached (the proxy trap must see nothing). The README's --oss line is typed,
// as printed, into a shell in a terminal, and the Codex it opens answers a
// prompt from the herd; docs/responses.md's `codex exec` line runs as printed.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, type ClientResult, type Exchange, clientScene, jsonLines, sseData, startClientFleet } from "./clients.ts";
import { NEWEST_OLLAMA } from "../src/fleet/ollama-releases.ts";
import { atRouter, printed } from "./doc-commands.ts";
import { eventually } from "./helpers.ts";

const CODEX = join(BIN, "codex");
const SHELL_STEP = `sim: call exec_command {"cmd":"echo herd-ok > out.txt && cat out.txt"}`;

// What keeps Codex off the network: no update check, no analytics, and no
// plugin marketplace (on by default, it syncs from github.com and chatgpt.com at start).
const OFFLINE_ROOT = "check_for_update_on_startup = false\n";
const OFFLINE_TABLES = "\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n";

/** ~/.codex/config.toml with herd as the model provider (what docs/responses.md shows). */
const herdProvider = (herd: string) =>
  `model = "gpt-5-codex"
model_provider = "herd"
${OFFLINE_ROOT}
[model_providers.herd]
name = "herd"
base_url = "${herd}/v1"
wire_api = "responses"
${OFFLINE_TABLES}`;

let url: string;

// One Mac with a coder (where gpt-5-codex auto-routes) and gpt-oss:20b (what --oss asks for by default), both loaded.
beforeAll(async () => {
  ({ url } = await startClientFleet([{ id: "studio", models: ["qwen2.5-coder:7b", "gpt-oss:20b"], loaded: ["qwen2.5-coder:7b", "gpt-oss:20b"] }]));
});

async function codex(config: (herd: string) => string, args: string[], env: (herd: string) => Record<string, string> = () => ({})) {
  const scene = await clientScene(url);
  mkdirSync(join(scene.home, ".codex"), { recursive: true });
  writeFileSync(join(scene.home, ".codex/config.toml"), config(scene.url));
  const result = await scene.run([CODEX, "exec", "--skip-git-repo-check", ...args], { env: env(scene.url) });
  return { ...result, work: scene.work };
}

/** The model turns Codex asked for, each with the events herd streamed back. */
function turns(r: ClientResult): (Exchange & { events: any[] })[] {
  return r.exchanges.filter((e) => e.method === "POST" && e.path === "/v1/responses").map((e) => ({ ...e, events: sseData(e.answer) }));
}

/** The finished response of a turn's stream (response.completed). */
const completed = (turn: { events: any[] }) => turn.events.find((e) => e.type === "response.completed")?.response;

/** The text of the message a finished response carries. */
const messageText = (response: any): string | undefined =>
  response?.output
    .filter((o: any) => o.type === "message")
    .flatMap((o: any) => o.content.map((c: any) => c.text))
    .join("");


/** Checks a shell tool loop: the command ran in the working dir, its output went back to herd, Codex ended on herd's last answer. */
function checkShellLoop(r: ClientResult & { work: string }, model: string) {
  expect(r.code, r.why("exit code")).toBe(0);
  const events = jsonLines(r, "--json");
  const command = events.find((e) => e.type === "item.completed" && e.item?.type === "command_execution")?.item;
  expect(command, r.why("event item.completed (command_execution)")).toMatchObject({ status: "completed", exit_code: 0, aggregated_output: "herd-ok\n" });
  expect(existsSync(join(r.work, "out.txt")) && readFileSync(join(r.work, "out.txt"), "utf8"), r.why("out.txt in the working dir")).toBe("herd-ok\n");

  const [first, second, ...more] = turns(r);
  expect(more.length === 0 && second !== undefined, r.why("POST /v1/responses: two turns (the call, then the answer)")).toBe(true);
  expect(first!.headers["x-fleet-served-model"], r.why("turn 1: header x-fleet-served-model")).toBe(model);
  const call = completed(first!)?.output.find((o: any) => o.type === "function_call");
  expect(call, r.why("turn 1: response.completed output: an exec_command function_call")).toMatchObject({ name: "exec_command" });
  const output = second!.body.input?.find((i: any) => i.type === "function_call_output");
  expect(output, r.why("turn 2: input function_call_output for the call")).toMatchObject({ call_id: call.call_id });
  expect(output.output, r.why("turn 2: function_call_output.output carries what the command printed")).toContain("herd-ok");

  const answer = messageText(completed(second!));
  expect(answer?.length, r.why("turn 2: response.completed output: a message")).toBeGreaterThan(10);
  const messages = events.filter((e) => e.type === "item.completed" && e.item?.type === "agent_message");
  expect(messages.at(-1)?.item.text, r.why("event item.completed (agent_message): herd's last answer")).toBe(answer);
  expect(events.at(-1)?.type, r.why("last event")).toBe("turn.completed");
  expect(r.outside, r.why("reached outside loopback")).toEqual([]);
}

describe("codex exec with herd as its Responses provider", () => {
  test("a text turn, docs/responses.md's line run as printed: exit 0, and stdout is the message herd answered", async () => {
    const line = printed("docs/responses.md", /^codex exec --skip-git-repo-check /);
    const scene = await clientScene(url);
    mkdirSync(join(scene.home, ".codex"), { recursive: true });
    writeFileSync(join(scene.home, ".codex/config.toml"), herdProvider(scene.url));
    const r = await scene.run(["sh", "-c", line], { env: { PATH: `${BIN}:${process.env.PATH}` } });
    expect(r.code, r.why("exit code")).toBe(0);
    const [turn, ...more] = turns(r);
    expect(turn !== undefined && more.length === 0, r.why("POST /v1/responses: one turn")).toBe(true);
    expect(turn!.body, r.why("turn: request body")).toMatchObject({ model: "gpt-5-codex", stream: true, store: false });
    expect(turn!.headers["x-fleet-served-model"], r.why("turn: header x-fleet-served-model (gpt-5-codex auto-routes to the loaded coder)")).toBe("qwen2.5-coder:7b");
    const answer = messageText(completed(turn!));
    expect(answer?.length, r.why("turn: response.completed output: a message")).toBeGreaterThan(10);
    expect(r.stdout.trim(), r.why("stdout: the final message")).toBe(answer!);
    expect(r.outside, r.why("reached outside loopback")).toEqual([]);
  }, 90_000);

  test("a shell tool loop (exec_command, sandbox workspace-write): the command runs in the working dir and its output goes back", async () => {
    const r = await codex(herdProvider, ["--json", "-s", "workspace-write", SHELL_STEP]);
    checkShellLoop(r, "qwen2.5-coder:7b");
  }, 90_000);
});

describe("codex exec --oss with herd as the local Ollama", () => {
  const oss = (args: string[]) => codex(() => `${OFFLINE_ROOT}${OFFLINE_TABLES}`, ["--oss", "--local-provider", "ollama", ...args], (herd) => ({ CODEX_OSS_BASE_URL: `${herd}/v1` }));
  // Before the first turn: is it up (the base URL ends in /v1, so /v1/models), is it new enough, is the model there (else it pulls).
  const setup = (r: ClientResult) => r.exchanges.filter((e) => e.path !== "/v1/responses").map((e) => `${e.method} ${e.path} → ${e.status}`);
  const CHECKS = ["GET /v1/models → 200", "GET /api/version → 200", "GET /api/tags → 200"];

  test("CODEX_OSS_BASE_URL=<herd>/v1: the version and model checks pass, gpt-oss:20b (the default) serves a shell tool loop", async () => {
    const r = await oss(["--json", "-s", "workspace-write", SHELL_STEP]);
    expect(setup(r), r.why("the requests before the first turn")).toEqual(CHECKS);
    const version = r.exchanges.find((e) => e.path === "/api/version")!;
    expect(JSON.parse(version.answer).version, r.why("GET /api/version: version (Codex needs Ollama 0.13.4 or newer)")).toBe(NEWEST_OLLAMA);
    expect(turns(r)[0]?.body.model, r.why("turn 1: request model (--oss's default)")).toBe("gpt-oss:20b");
    checkShellLoop(r, "gpt-oss:20b");
  }, 90_000);

  test("-m a model no node has: Codex pulls it through herd (POST /api/pull), then it serves the turn", async () => {
    const r = await oss(["-m", "qwen3:8b", "Name three herd animals"]);
    expect(r.code, r.why("exit code")).toBe(0);
    expect(setup(r), r.why("the requests before the first turn")).toEqual([...CHECKS, "POST /api/pull → 200"]);
    const pull = r.exchanges.find((e) => e.path === "/api/pull")!;
    expect(pull.body, r.why("POST /api/pull: request body")).toMatchObject({ model: "qwen3:8b" });
    expect(pull.answer.trim().split("\n").map((l) => JSON.parse(l)).at(-1), r.why("POST /api/pull: the last progress line")).toEqual({ status: "success" });
    const [turn] = turns(r);
    expect(turn?.headers["x-fleet-served-model"], r.why("turn: header x-fleet-served-model")).toBe("qwen3:8b");
    expect(r.stdout.trim(), r.why("stdout: the final message")).toBe(messageText(completed(turn!))!);
    expect(r.outside, r.why("reached outside loopback")).toEqual([]);
  }, 90_000);
});

describe("the README's Codex line", () => {
  test("typed into a shell as printed, with no config: Codex opens on the herd's gpt-oss:20b, and a prompt is answered from it", async () => {
    const line = printed("README.md", /\bcodex --oss\b/);
    expect(printed("docs/responses.md", /\bcodex --oss\b/)).toBe(line);
    const scene = await clientScene(url);
    const terminal = await scene.terminal();
    await terminal.type(atRouter(line, scene.url));
    await terminal.press("Enter");
    // Its composer (not a list to pick a provider from), on the model --oss defaults to.
    await terminal.waitFor(/^› (?!\d+\. ).*\n(?:.*\n)?\s+gpt-oss:20b /m);
    const prompt = "Name three herd animals";
    await terminal.type(prompt);
    await terminal.waitFor(new RegExp(`^› ${prompt}`, "m"), 10_000);
    await terminal.press("Enter");
    const turn = async () => (await scene.exchanges()).find((e) => e.path === "/v1/responses" && JSON.stringify(e.body.input).includes(prompt));
    const asked = await eventually(turn, 30_000, "the turn at herd").catch(async (e) => expect.unreachable(`${e.message}; the terminal shows:\n${await terminal.screen()}`));
    expect(asked.status, await terminal.screen()).toBe(200);
    expect(asked.headers["x-fleet-served-model"]).toBe("gpt-oss:20b");
    const answer = messageText(completed({ events: sseData(asked.answer) }))!;
    await terminal.waitFor(new RegExp(RegExp.escape(answer.slice(0, 40))));
  }, 90_000);
});
