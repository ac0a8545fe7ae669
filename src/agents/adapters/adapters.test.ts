// What each adapter writes for a worker and how it reads the worker back (the
// real programs run in test/agents-real-workers.test.ts).
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { INSTRUCTIONS, turnFileOf, type WorkerSetup } from "./adapter.ts";
import { claudeCode, lastAssistantText } from "./claude-code.ts";
import { cli, readyWhen } from "./cli.ts";
import { codex, worktreeGitWrites } from "./codex.ts";

const root = mkdtempSync(join(tmpdir(), "herd-adapters-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const setup = (env: Record<string, string> = {}): WorkerSetup => ({
  herdUrl: "http://127.0.0.1:4000",
  sessionId: "w-1",
  token: "hw_worker-token",
  cwd: "/work/repo",
  dir: mkdtempSync(join(root, `w${++n}-`)),
  argv: ["/bin/agent", "--flag"],
  env: { PATH: "/bin", ...env },
  permissions: { allow: [], deny: [] },
});
const json = (path: string) => JSON.parse(readFileSync(path, "utf8"));

test("cli: the environment and the instructions, ready at once, no record of its own", () => {
  const s = setup();
  expect(cli.prepare(s)).toEqual({ argv: s.argv, env: { ...s.env, HERD_INSTRUCTIONS: INSTRUCTIONS } });
  expect([cli.ready("", false), cli.lastAnswer(s.dir), cli.endsTurn(s.dir, { content: "x", typedDuring: null })]).toEqual([true, null, true]);
});

test("claude-code: first-run state settled, the herd MCP server with the worker's credential, the instructions, the Stop hook", () => {
  const s = setup({ ANTHROPIC_API_KEY: "hk-workers-key-1234567890" });
  const { argv, env } = claudeCode.prepare(s);
  const config = env.CLAUDE_CONFIG_DIR!;
  expect(json(join(config, ".claude.json"))).toMatchObject({
    hasCompletedOnboarding: true,
    projects: { "/work/repo": { hasTrustDialogAccepted: true } },
  });
  const settings = json(join(config, "settings.json"));
  expect(settings.permissions).toEqual({ defaultMode: "dontAsk", disableAutoMode: "disable", allow: ["mcp__herd"], deny: [] });
  expect(settings.hooks.Stop[0].hooks[0].command).toContain('"$HERD_URL/sessions/$HERD_SESSION_ID/reply"');
  const mcpAt = argv.indexOf("--mcp-config") + 1;
  expect(json(argv[mcpAt]!).mcpServers.herd).toMatchObject({ type: "http", url: "http://127.0.0.1:4000/mcp", headers: { authorization: "Bearer hw_worker-token" } });
  expect(argv.slice(0, 2)).toEqual(s.argv);
  expect(argv.at(-1)).toBe(INSTRUCTIONS);
  expect(env).toMatchObject({ ANTHROPIC_AUTH_TOKEN: "hk-workers-key-1234567890", HERD_TURN_FILE: turnFileOf(s.dir), DISABLE_AUTOUPDATER: "1" });
});

test("claude-code: the key is a bearer token, so no part of it is written (Claude Code keeps the tail of an ANTHROPIC_API_KEY it approved)", () => {
  const s = setup({ ANTHROPIC_API_KEY: "hk-workers-key-1234567890" });
  const { env } = claudeCode.prepare(s);
  expect(env.ANTHROPIC_API_KEY).toBeUndefined();
  for (const file of [".claude.json", "settings.json"]) expect(readFileSync(join(env.CLAUDE_CONFIG_DIR!, file), "utf8")).not.toContain("1234567890");
  expect(claudeCode.prepare(setup()).env.ANTHROPIC_AUTH_TOKEN).toBe("hw_worker-token"); // an open herd: the worker's credential
});

test("claude-code: the profile's rules join herd's own tools; the mode never asks", () => {
  const s = { ...setup(), permissions: { allow: ["Bash(git commit *)", "Edit"], deny: ["Bash(curl *)"] } };
  const settings = json(join(claudeCode.prepare(s).env.CLAUDE_CONFIG_DIR!, "settings.json"));
  expect(settings.permissions).toEqual({ defaultMode: "dontAsk", disableAutoMode: "disable", allow: ["mcp__herd", "Bash(git commit *)", "Edit"], deny: ["Bash(curl *)"] });
});

test("claude-code: a dialog at the bottom of the screen is read with its question; the input box, or a dialog above it, is none", () => {
  const screen = (name: string) => readFileSync(join(import.meta.dir, "../../../test/fixtures/claude-code", name), "utf8");
  const bash = claudeCode.dialog(screen("bash-approval.txt"));
  expect(bash?.question).toBe("Do you want to proceed?");
  expect(bash?.dialog).toStartWith("Bash command\n");
  expect(bash?.dialog).toContain(`node -e "require('fs').writeFileSync('n.txt','1')"`);
  expect(claudeCode.dialog(screen("auto-mode-unreachable.txt"))?.question).toBe("Auto mode can't check actions in this session");
  const box = `${"─".repeat(40)}\n❯ \n${"─".repeat(40)}\n  ⏵⏵ don't ask on · esc to interrupt`;
  expect([claudeCode.dialog(box), claudeCode.dialog(`${screen("bash-approval.txt")}\n● done\n${box}`)]).toEqual([null, null]);
});

test("claude-code: ready at its input box once it has herd's tools, not at a dialog", () => {
  const box = `${"─".repeat(40)}\n❯ \n${"─".repeat(40)}`;
  expect([claudeCode.ready(box, true), claudeCode.ready(box, false), claudeCode.ready("Do you trust the files in this folder?\n❯ 1. Yes", true)]).toEqual([true, false, false]);
});

test("claude-code: a turn its StopFailure hook ended failed; rate limits, billing and overload are the credential exhausted", () => {
  const s = setup();
  const settings = JSON.parse(readFileSync(join(claudeCode.prepare(s).env.CLAUDE_CONFIG_DIR!, "settings.json"), "utf8"));
  expect(settings.hooks.StopFailure).toEqual(settings.hooks.Stop);
  const failed = (input: Record<string, unknown>) => {
    writeFileSync(turnFileOf(s.dir), JSON.stringify(input));
    return claudeCode.turnFailure(s.dir);
  };
  expect(failed({ hook_event_name: "StopFailure", error: "rate_limit", error_details: "429 key workers: 3 a minute" })).toEqual({ exhausted: true, detail: "Claude Code ended the turn on its model's error rate_limit: 429 key workers: 3 a minute" });
  expect(failed({ hook_event_name: "StopFailure", error: "invalid_request" })).toEqual({ exhausted: false, detail: "Claude Code ended the turn on its model's error invalid_request" });
  expect([failed({ hook_event_name: "Stop", last_assistant_message: "done" }), codex.turnFailure(s.dir), cli.turnFailure(s.dir)]).toEqual([null, null, null]);
});

test("claude-code: the answer is the Stop hook's last message, else the transcript's text after the last typed prompt", () => {
  const s = setup();
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ last_assistant_message: " the answer \n" }));
  expect(claudeCode.lastAnswer(s.dir)).toBe("the answer");
  const transcript = join(s.dir, "t.jsonl");
  const lines = [
    { type: "user", message: { role: "user", content: "first turn" } },
    { type: "assistant", message: { content: [{ type: "text", text: "old answer" }] } },
    { type: "user", message: { role: "user", content: "second turn" } },
    { type: "assistant", message: { content: [{ type: "thinking", thinking: "" }, { type: "tool_use", name: "Bash" }] } },
    { type: "user", message: { role: "user", content: [{ type: "tool_result", content: "ok" }] } },
    { type: "assistant", message: { content: [{ type: "text", text: "new answer" }] } },
  ];
  writeFileSync(transcript, `${lines.map((l) => JSON.stringify(l)).join("\n")}\nnot json\n`);
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ transcript_path: transcript }));
  expect(claudeCode.lastAnswer(s.dir)).toBe("new answer");
  expect(lastAssistantText('{"type":"user","message":{"content":"q"}}')).toBeNull();
});

test("codex: herd as its Responses provider, the herd MCP server, AGENTS.md, notify as the turn-done hook, no daemon", () => {
  const s = setup({ OPENAI_API_KEY: "hk-workers" });
  const { argv, env } = codex.prepare(s);
  const toml = readFileSync(join(env.CODEX_HOME!, "config.toml"), "utf8");
  expect(toml).toContain('model_provider = "herd"');
  expect(toml).toContain('base_url = "http://127.0.0.1:4000/v1"');
  expect(toml).toContain('env_key = "HERD_MODEL_KEY"');
  expect(toml).toContain('[mcp_servers.herd]\nurl = "http://127.0.0.1:4000/mcp"\nbearer_token_env_var = "HERD_TOKEN"');
  expect(toml).toContain('[projects."/work/repo"]\ntrust_level = "trusted"');
  expect(toml).toMatch(/^notify = \["\/bin\/sh", "-c", ".*HERD_TURN_FILE/m);
  expect(readFileSync(join(env.CODEX_HOME!, "AGENTS.md"), "utf8")).toBe(`${INSTRUCTIONS}\n`);
  expect(argv).toEqual([...s.argv, "--no-daemon"]);
  expect(env).toMatchObject({ HERD_MODEL_KEY: "hk-workers", HERD_TURN_FILE: turnFileOf(s.dir) });
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ type: "agent-turn-complete", "last-assistant-message": "done it" }));
  expect(codex.lastAnswer(s.dir)).toBe("done it");
});

test("claude-code: a Stop for the prompt it was on when the open turn was typed is late; one for a later prompt ends it", () => {
  const s = setup();
  const { env } = claudeCode.prepare(s);
  expect(claudeCode.turnInProgress(s.dir)).toBeNull();
  expect(claudeCode.endsTurn(s.dir, { content: "first", typedDuring: null })).toBe(true);
  writeFileSync(env.HERD_PROMPT_FILE!, JSON.stringify({ prompt_id: "p1" })); // the UserPromptSubmit hook
  const second = { content: "second", typedDuring: claudeCode.turnInProgress(s.dir) };
  expect(second.typedDuring).toBe("p1");
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ prompt_id: "p1" })); // p1's Stop, after "second" was typed
  expect(claudeCode.endsTurn(s.dir, second)).toBe(false);
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ prompt_id: "p2" }));
  expect(claudeCode.endsTurn(s.dir, second)).toBe(true);
});

test("codex: a notify ends the open turn only when the turn's text is among its prompts", () => {
  const s = setup();
  codex.prepare(s);
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ "input-messages": ["first"] }));
  expect(codex.endsTurn(s.dir, { content: "second\u0003 ", typedDuring: null })).toBe(false);
  writeFileSync(turnFileOf(s.dir), JSON.stringify({ "input-messages": ["second␃"] }));
  expect(codex.endsTurn(s.dir, { content: "second\u0003 ", typedDuring: null })).toBe(true);
});

test("codex: its commands run under herd's permission profile: Codex's :workspace, plus what a commit in herd's worktree writes of the git dir", () => {
  const repo = join(root, "repo");
  const git = (cwd: string, ...args: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, stderr: "pipe" });
  mkdirSync(repo);
  git(repo, "init", "-q");
  git(repo, "commit", "-q", "--allow-empty", "-m", "start");
  const tree = join(root, "worktrees", "repo", "T-1");
  git(repo, "worktree", "add", "-q", "-b", "herd/T-1", tree);
  const dotGit = realpathSync(join(repo, ".git"));
  const writes = [`${dotGit}/worktrees/T-1`, `${dotGit}/objects`, `${dotGit}/refs/heads/herd`, `${dotGit}/logs/refs/heads/herd`];
  expect(worktreeGitWrites(tree)).toEqual(writes);
  const { env } = codex.prepare({ ...setup(), cwd: tree });
  const toml = readFileSync(join(env.CODEX_HOME!, "config.toml"), "utf8");
  expect(toml).toContain('approval_policy = "never"\ndefault_permissions = "herd"\n');
  expect(toml).toContain(`[permissions.herd]\nextends = ":workspace"\n[permissions.herd.filesystem]\n${writes.map((p) => `"${p}" = "write"`).join("\n")}\n`);
  // The repository itself (a .git folder), a folder that is no repository, and a .git file that git's own link does not confirm: nothing more.
  const forged = join(root, "forged");
  mkdirSync(forged);
  writeFileSync(join(forged, ".git"), `gitdir: ${dotGit}/worktrees/T-1\n`);
  expect([worktreeGitWrites(repo), worktreeGitWrites(root), worktreeGitWrites(forged)]).toEqual([[], [], []]);
});

test("cli with a ready screen: ready once the pattern shows, not before", () => {
  const slow = readyWhen("^slow> ");
  expect([slow.ready("starting…", false), slow.ready("banner\nslow> ", false)]).toEqual([false, true]);
});

test("claude-code and codex: working while the status says esc to interrupt, typed or idle at their prompt", () => {
  const rule = "─".repeat(40);
  expect(claudeCode.phase(`✽ Befuddling…\n${rule}\n❯ \n${rule}\n  esc to interrupt`)).toBe("working");
  expect(claudeCode.phase(`${rule}\n❯ Run the build.\n${rule}`)).toBe("typed");
  expect(claudeCode.phase(`${rule}\n❯ \n${rule}\n  ⏵⏵ auto mode on`)).toBe("idle");
  expect([codex.phase("• Working (3s • esc to interrupt)\n› "), codex.phase("› Ask Codex")]).toEqual(["working", "idle"]);
  expect(claudeCode.frame("hi", "t-1")).toBe('hi\n\n[herd turn t-1: pass turn "t-1" to fleet_reply]');
});
