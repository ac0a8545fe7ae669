// Codex as a worker: its own CODEX_HOME with a config.toml whose model
// provider is the herd's Responses surface (an API-key provider: no sign-in
// screen), the MCP server "herd" with the worker's credential, and the fleet's
// instructions in AGENTS.md, and its notify hook (run after every turn with the
// turn's JSON, its last message included) as the turn-done hook. Its commands
// run in Codex's sandbox (bubblewrap on Linux, Seatbelt on macOS) under a
// permission profile herd writes: the workspace, plus the parts of the git dir
// a commit in herd's worktree writes.
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pasteable } from "../paste.ts";
import { type AgentAdapter, INSTRUCTIONS, readHookFile, TURN_DONE_CALL, turnFileOf, WORKING, withTurnId } from "./adapter.ts";

/** notify runs argv with the turn's JSON as its last argument. */
const NOTIFY = ["/bin/sh", "-c", `printf '%s' "$1" > "$HERD_TURN_FILE"; ${TURN_DONE_CALL}`, "herd-turn-done"];

const toml = (s: string) => JSON.stringify(s);

/** The composer's › prompt (a sign-in screen has none). */
const COMPOSER = /^› /m;

const readText = (path: string) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
};

/**
 * What a commit in the linked worktree at `cwd` writes outside it: the worktree's own git dir
 * (`<repo>/.git/worktrees/<name>`: index, HEAD, its reflog), the shared objects, and the folder
 * of its branch's ref and reflog (`refs/heads/herd` for herd's `herd/<ticket>`). Never the repo's
 * config or hooks (a hook written there would run outside the sandbox at the user's next commit).
 * Codex's :workspace profile keeps all of it read-only, a worktree's gitdir included
 * (codex-rs/protocol, rust-v0.171.0: the read-only subpaths of a writable root).
 * Empty for a cwd that is no linked worktree, or whose git dir does not point back at it.
 */
export function worktreeGitWrites(cwd: string): string[] {
  const gitDir = /^gitdir: (.+)$/m.exec(readText(join(cwd, ".git")) ?? "")?.[1];
  if (!gitDir) return [];
  const own = resolve(cwd, gitDir.trim());
  const common = resolve(own, readText(join(own, "commondir"))?.trim() ?? "");
  // git's own back link: <gitdir>/gitdir names this worktree's .git, and the gitdir is one of the repo's worktrees.
  const back = resolve(own, readText(join(own, "gitdir"))?.trim() ?? "");
  if (!existsSync(back) || realpathSync(back) !== realpathSync(join(cwd, ".git")) || dirname(own) !== join(common, "worktrees")) return [];
  const ref = /^ref: (refs\/heads\/(?!.*\.\.)\S+)$/m.exec(readText(join(own, "HEAD")) ?? "")?.[1]; // git allows no ".." in a ref name
  const refDirs = ref ? [join(common, dirname(ref)), join(common, "logs", dirname(ref))] : [];
  return [own, join(common, "objects"), ...refDirs].filter((p) => existsSync(p)).map((p) => realpathSync(p));
}

export const codex: AgentAdapter = {
  frame: withTurnId,
  // 0.171.0: Esc while a turn runs submits its interrupt ("esc to interrupt" in the status line); Ctrl-C would also
  // arm its quit shortcut. Its empty composer shows a placeholder, so herd cannot tell typed text from none: no clear.
  interrupt: { stop: ["Escape"], clear: [] },
  phase: (screen) => (COMPOSER.test(screen) && !WORKING.test(screen) ? "idle" : "working"),
  // notify names the turn's prompts (trimmed): the open turn's text, its id with it, must be among them.
  turnInProgress: () => null,
  endsTurn(dir, turn) {
    const prompts = readHookFile(turnFileOf(dir))?.["input-messages"];
    return !Array.isArray(prompts) || prompts.includes(pasteable(turn.content).trim());
  },
  prepare({ herdUrl, token, cwd, dir, argv, env }) {
    const home = join(dir, "codex");
    mkdirSync(home, { recursive: true, mode: 0o700 });
    // Off the network but for herd (codex-rs, rust-v0.171.0; docs/agents.md lists each fetch): no update check
    // (api.github.com, formulae.brew.sh), no analytics nor Statsig metrics (ab.chatgpt.com), no feedback upload
    // (Sentry), no plugin marketplace (chatgpt.com, github.com/openai/plugins). The announcement tip has no switch.
    const config = [
      `model = "gpt-5-codex"`,
      `model_provider = "herd"`,
      // Nobody is at the pane to answer a prompt: a command the sandbox refuses fails, and the model sees why.
      `approval_policy = "never"`,
      `default_permissions = "herd"`,
      `check_for_update_on_startup = false`,
      `notify = [${NOTIFY.map(toml).join(", ")}]`,
      `[analytics]`,
      `enabled = false`,
      `[otel]`,
      `metrics_exporter = "none"`,
      `[feedback]`,
      `enabled = false`,
      `[tui]`,
      `show_tooltips = false`,
      `[features]`,
      `plugins = false`,
      `[model_providers.herd]`,
      `name = "herd"`,
      `base_url = ${toml(`${herdUrl}/v1`)}`,
      `wire_api = "responses"`,
      `env_key = "HERD_MODEL_KEY"`,
      `[mcp_servers.herd]`,
      `url = ${toml(`${herdUrl}/mcp`)}`,
      `bearer_token_env_var = "HERD_TOKEN"`,
      `default_tools_approval_mode = "approve"`, // the fleet's tools run unasked: there is nobody at the pane to approve them
      `[projects.${toml(cwd)}]`,
      `trust_level = "trusted"`,
      // Codex's :workspace (writes in the cwd and the temp dirs, no network for commands) and the git dir a worktree's commit needs.
      `[permissions.herd]`,
      `extends = ":workspace"`,
      `[permissions.herd.filesystem]`,
      ...worktreeGitWrites(cwd).map((path) => `${toml(path)} = "write"`),
      ``,
    ].join("\n");
    writeFileSync(join(home, "config.toml"), config, { mode: 0o600 });
    writeFileSync(join(home, "AGENTS.md"), `${INSTRUCTIONS}\n`, { mode: 0o600 });
    // --no-daemon: the TUI's app server runs in its own process, not as a detached daemon that outlives the worker.
    return { argv: [...argv, "--no-daemon"], env: { ...env, CODEX_HOME: home, HERD_MODEL_KEY: env.OPENAI_API_KEY ?? token, HERD_TURN_FILE: turnFileOf(dir) } };
  },
  // The composer's › prompt (a sign-in screen has none), once its MCP client has herd's tools.
  ready: (screen, hasTools) => hasTools && COMPOSER.test(screen),
  lastAnswer(dir) {
    const last = readHookFile(turnFileOf(dir))?.["last-assistant-message"];
    return typeof last === "string" ? last.trim() : null;
  },
  // approval_policy "never": Codex asks nothing, so there is no dialog to look for.
  dialog: () => null,
  // Its notify fires for a turn that completes, never for one that failed: herd learns of that one by its expiry.
  turnFailure: () => null,
};
