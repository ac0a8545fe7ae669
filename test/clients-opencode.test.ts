// The real opencode (the pinned opencode-ai) against a router process over a
// simulated node: `opencode run` with herd declared as an OpenAI-compatible
// provider (@ai-sdk/openai-compatible, which opencode bundles) — a text turn,
// a bash tool loop whose command really runs, a thinking model's reasoning
// shown. Each run has a fresh home holding ~/.config/opencode/opencode.json,
// the scrubbed environment of clients.ts and a deadline; a recorder between
// opencode and herd keeps what each side said, and nothing outside loopback
// may be reached (the proxy trap must see nothing). The prompt goes in on
// stdin: `opencode run MESSAGE` wraps a message holding spaces in quotes.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, type ClientResult, type Exchange, clientScene, jsonLines, sseData, startClientFleet } from "./clients.ts";

const OPENCODE = join(BIN, "opencode");

// What keeps opencode off the network: no models.dev catalog fetch, and npm
// offline (opencode installs @opencode-ai/plugin into its config dir at every
// start, with no switch to turn that off; offline, the install fails at once
// and opencode carries on). autoupdate and share are off in the config.
const OFFLINE_ENV = { OPENCODE_DISABLE_MODELS_FETCH: "1", npm_config_offline: "true" };

/** ~/.config/opencode/opencode.json with herd as a provider (what docs/responses.md shows). */
const config = (herd: string) => ({
  $schema: "https://opencode.ai/config.json",
  autoupdate: false,
  share: "disabled",
  model: "herd/qwen2.5-coder:7b",
  provider: {
    herd: {
      npm: "@ai-sdk/openai-compatible",
      name: "herd",
      options: { baseURL: `${herd}/v1` },
      models: { "qwen2.5-coder:7b": { name: "Qwen2.5 Coder 7B" }, "gpt-oss:20b": { name: "gpt-oss 20B" } },
    },
  },
});

let url: string;

beforeAll(async () => {
  ({ url } = await startClientFleet([{ id: "studio", models: ["qwen2.5-coder:7b", "gpt-oss:20b"], loaded: ["qwen2.5-coder:7b", "gpt-oss:20b"] }]));
});

async function opencode(args: string[], prompt: string) {
  const scene = await clientScene(url);
  mkdirSync(join(scene.home, ".config/opencode"), { recursive: true });
  writeFileSync(join(scene.home, ".config/opencode/opencode.json"), JSON.stringify(config(scene.url), null, 2));
  const result = await scene.run([OPENCODE, "run", ...args], { env: OFFLINE_ENV, stdin: prompt });
  return { ...result, work: scene.work };
}

/**
 * The agent's model turns (opencode also asks, without tools, for a title),
 * each with the chunks herd streamed back and their text.
 */
function turns(r: ClientResult): (Exchange & { chunks: any[]; text: string; reasoning: string })[] {
  return r.exchanges
    .filter((e) => e.method === "POST" && e.path === "/v1/chat/completions" && e.body.tools?.length)
    .map((e) => {
      const chunks = sseData(e.answer);
      const delta = (field: string) => chunks.map((c) => c.choices?.[0]?.delta?.[field] ?? "").join("");
      return { ...e, chunks, text: delta("content"), reasoning: delta("reasoning") };
    });
}


describe("opencode run with herd as an OpenAI-compatible provider", () => {
  test("a text turn: exit 0, and stdout is the message herd answered", async () => {
    const r = await opencode([], "Name three herd animals");
    expect(r.code, r.why("exit code")).toBe(0);
    const [turn, ...more] = turns(r);
    expect(turn !== undefined && more.length === 0, r.why("POST /v1/chat/completions with tools: one turn")).toBe(true);
    expect(turn!.body, r.why("turn: request body")).toMatchObject({ model: "qwen2.5-coder:7b", stream: true });
    expect(turn!.headers["x-fleet-served-model"], r.why("turn: header x-fleet-served-model")).toBe("qwen2.5-coder:7b");
    expect(turn!.text.length, r.why("turn: the streamed delta.content")).toBeGreaterThan(10);
    expect(r.stdout.trim(), r.why("stdout: the final message")).toBe(turn!.text);
    expect(r.outside, r.why("reached outside loopback")).toEqual([]);
  }, 90_000);

  test("a bash tool loop: the command runs in the working dir and its output goes back", async () => {
    const r = await opencode(["--format", "json"], `sim: call bash {"command":"echo herd-ok > out.txt && cat out.txt","description":"Write out.txt"}`);
    expect(r.code, r.why("exit code")).toBe(0);
    const events = jsonLines(r, "--format json");
    const tool = events.find((e) => e.type === "tool_use")?.part;
    expect(tool, r.why("event tool_use")).toMatchObject({ tool: "bash", state: { status: "completed", output: "herd-ok\n", metadata: { exit: 0 } } });
    expect(existsSync(join(r.work, "out.txt")) && readFileSync(join(r.work, "out.txt"), "utf8"), r.why("out.txt in the working dir")).toBe("herd-ok\n");

    const [first, second, ...more] = turns(r);
    expect(second !== undefined && more.length === 0, r.why("POST /v1/chat/completions with tools: two turns (the call, then the answer)")).toBe(true);
    const call = first!.chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])[0];
    expect(call?.function, r.why("turn 1: a delta.tool_calls entry for bash")).toMatchObject({ name: "bash" });
    const result = second!.body.messages.find((m: any) => m.role === "tool");
    expect(result, r.why("turn 2: a tool message for the call")).toMatchObject({ tool_call_id: call.id });
    expect(result.content, r.why("turn 2: the tool message carries what the command printed")).toContain("herd-ok");

    expect(second!.text.length, r.why("turn 2: the streamed delta.content")).toBeGreaterThan(10);
    expect(events.filter((e) => e.type === "text").at(-1)?.part.text, r.why("event text: herd's last answer")).toBe(second!.text);
    expect(events.at(-1), r.why("last event")).toMatchObject({ type: "step_finish", part: { reason: "stop" } });
    expect(r.outside, r.why("reached outside loopback")).toEqual([]);
  }, 90_000);

  test("a thinking model (--thinking): herd's delta.reasoning shows as a reasoning part, then the answer", async () => {
    const r = await opencode(["-m", "herd/gpt-oss:20b", "--thinking", "--format", "json"], "Why is the sky blue?");
    expect(r.code, r.why("exit code")).toBe(0);
    const [turn, ...more] = turns(r);
    expect(turn !== undefined && more.length === 0, r.why("POST /v1/chat/completions with tools: one turn")).toBe(true);
    expect(turn!.reasoning.length, r.why("turn: the streamed delta.reasoning")).toBeGreaterThan(10);
    const events = jsonLines(r, "--format json");
    expect(events.find((e) => e.type === "reasoning")?.part.text, r.why("event reasoning: herd's delta.reasoning")).toBe(turn!.reasoning);
    expect(events.filter((e) => e.type === "text").at(-1)?.part.text, r.why("event text: herd's answer")).toBe(turn!.text);
    expect(r.outside, r.why("reached outside loopback")).toEqual([]);
  }, 90_000);
});
