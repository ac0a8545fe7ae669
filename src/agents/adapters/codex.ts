// Codex as a worker: its own CODEX_HOME with a config.toml whose model
// provider is the herd's Responses surface (an API-key provider: no sign-in
// screen), the MCP server "herd" with the worker's credential, and the fleet's
// instructions in AGENTS.md, and its notify hook (run after every turn with the
// turn's JSON, its last message included) as the turn-done hook.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pasteable } from "../paste.ts";
import { type AgentAdapter, INSTRUCTIONS, readHookFile, TURN_DONE_CALL, turnFileOf } from "./adapter.ts";

/** notify runs argv with the turn's JSON as its last argument. */
const NOTIFY = ["/bin/sh", "-c", `printf '%s' "$1" > "$HERD_TURN_FILE"; ${TURN_DONE_CALL}`, "herd-turn-done"];

const toml = (s: string) => JSON.stringify(s);

export const codex: AgentAdapter = {
  // notify names the turn's prompts (trimmed): the open turn's text must be among them.
  turnInProgress: () => null,
  endsTurn(dir, turn) {
    const prompts = readHookFile(turnFileOf(dir))?.["input-messages"];
    return !Array.isArray(prompts) || prompts.includes(pasteable(turn.content).trim());
  },
  prepare({ herdUrl, token, cwd, dir, argv, env }) {
    const home = join(dir, "codex");
    mkdirSync(home, { recursive: true, mode: 0o700 });
    // Off the network but for herd: no update check, no analytics, no tips (fetched from github), no plugin marketplace.
    const config = [
      `model = "gpt-5-codex"`,
      `model_provider = "herd"`,
      `approval_policy = "never"`,
      `check_for_update_on_startup = false`,
      `notify = [${NOTIFY.map(toml).join(", ")}]`,
      `[analytics]`,
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
      ``,
    ].join("\n");
    writeFileSync(join(home, "config.toml"), config, { mode: 0o600 });
    writeFileSync(join(home, "AGENTS.md"), `${INSTRUCTIONS}\n`, { mode: 0o600 });
    // --no-daemon: the TUI's app server runs in its own process, not as a detached daemon that outlives the worker.
    return { argv: [...argv, "--no-daemon"], env: { ...env, CODEX_HOME: home, HERD_MODEL_KEY: env.OPENAI_API_KEY ?? token, HERD_TURN_FILE: turnFileOf(dir) } };
  },
  // The composer's › prompt (a sign-in screen has none), once its MCP client has herd's tools.
  ready: (screen, hasTools) => hasTools && /^› /m.test(screen),
  lastAnswer(dir) {
    const last = readHookFile(turnFileOf(dir))?.["last-assistant-message"];
    return typeof last === "string" ? last.trim() : null;
  },
  // approval_policy "never": Codex asks nothing, so there is no dialog to look for.
  dialog: () => null,
};
