// Claude Code as a worker. Its config dir (CLAUDE_CONFIG_DIR) is the worker's
// own, with first-run state settled so the TUI opens straight on its prompt:
// onboarding done, the herd key approved, the cwd trusted. The MCP server
// "herd" (always loaded, its tools allowed) carries the worker's credential, the
// fleet's instructions go into the system prompt, and a Stop hook tells herd the
// moment a turn ends, so one that ended without fleet_reply is answered from
// Claude Code's own record of the turn (the hook's input, its session
// transcript under the config dir), not from the screen.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentAdapter, INSTRUCTIONS, readHookFile, TURN_DONE_CALL, turnFileOf, WORKING, withTurnId } from "./adapter.ts";

/** The Stop hook keeps what Claude Code hands it on stdin (the turn's last message, the transcript's path, the prompt's id), then tells herd. */
const STOP_HOOK = `cat > "$HERD_TURN_FILE"; ${TURN_DONE_CALL}`;
/** The UserPromptSubmit hook keeps the prompt Claude Code took: its id is the turn it is on. */
const PROMPT_HOOK = `cat > "$HERD_PROMPT_FILE"`;
const promptFileOf = (dir: string) => join(dir, "prompt.json");
const idOf = (hookInput: Record<string, unknown> | null) => (typeof hookInput?.prompt_id === "string" ? hookInput.prompt_id : null);

const configDirOf = (dir: string) => join(dir, "claude");

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value, null, 2), { mode: 0o600 });

/** The input box (a rule, then the ❯ prompt); a dialog (trust, login) has none. Empty: the rule below follows at once. */
const INPUT_BOX = /─{20,}\n❯/;
const EMPTY_BOX = /─{20,}\n❯\s*\n─{20,}/;
/** StopFailure's errors (2.1.332: its hook input's `error`) that mean the model's credential or its limits ran out, not a fault. */
const EXHAUSTED = new Set(["rate_limit", "billing_error", "overloaded"]);

export const claudeCode: AgentAdapter = {
  frame: withTurnId,
  // 2.1.332: Escape while it works stops the turn ("esc to interrupt" in its status line) and puts an unanswered
  // prompt back in the box; with text in the box a second Escape clears it ("esc again to clear"). Never pressed
  // twice at an empty box, where it opens the rewind menu.
  interrupt: { stop: ["Escape"], clear: ["Escape", "Escape"] },
  phase: (screen) => (WORKING.test(screen) || !INPUT_BOX.test(screen) ? "working" : EMPTY_BOX.test(screen) ? "idle" : "typed"),
  // A turn typed while Claude Code is busy is queued, even folded into the running turn (same prompt id),
  // whose Stop then comes first: a Stop for the prompt it was on when the open turn was typed is late.
  turnInProgress: (dir) => idOf(readHookFile(promptFileOf(dir))),
  endsTurn(dir, turn) {
    const stopped = idOf(readHookFile(turnFileOf(dir)));
    return stopped === null || stopped !== turn.typedDuring;
  },
  prepare({ herdUrl, token, cwd, dir, argv, env, permissions }) {
    const configDir = configDirOf(dir);
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    // The herd key the profile names (an open herd takes any key, so the worker's own credential does), as a
    // bearer token: Claude Code asks about an ANTHROPIC_API_KEY and keeps its last 20 characters in .claude.json.
    const { ANTHROPIC_API_KEY: key = token, ...rest } = env;
    writeJson(join(configDir, ".claude.json"), {
      hasCompletedOnboarding: true,
      projects: { [cwd]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    });
    writeJson(join(configDir, "settings.json"), {
      // dontAsk: a call no rule allows is refused to the model, not asked (nobody is at the pane to answer). Auto mode,
      // the default, asks Anthropic's service about each call (from the herd it cannot, so it asks the pane), and offers
      // itself at start when off: disabled (cli.js: permissions.disableAutoMode).
      permissions: { defaultMode: "dontAsk", disableAutoMode: "disable", allow: ["mcp__herd", ...permissions.allow], deny: permissions.deny },
      // StopFailure: the turn ended on an API error instead (no Stop comes); the same hook keeps its input for herd.
      hooks: {
        Stop: [{ hooks: [{ type: "command", command: STOP_HOOK }] }],
        StopFailure: [{ hooks: [{ type: "command", command: STOP_HOOK }] }],
        UserPromptSubmit: [{ hooks: [{ type: "command", command: PROMPT_HOOK }] }],
      },
    });
    const mcp = join(dir, "mcp.json");
    writeJson(mcp, { mcpServers: { herd: { type: "http", url: `${herdUrl}/mcp`, headers: { authorization: `Bearer ${token}` }, alwaysLoad: true } } });
    return {
      argv: [...argv, "--mcp-config", mcp, "--append-system-prompt", INSTRUCTIONS],
      env: {
        ...rest,
        ANTHROPIC_AUTH_TOKEN: key,
        CLAUDE_CONFIG_DIR: configDir,
        HERD_TURN_FILE: turnFileOf(dir),
        HERD_PROMPT_FILE: promptFileOf(dir),
        // Workers run on the herd's models: nothing goes to Anthropic's services.
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        CLAUDE_CODE_MODEL_CATALOG: "off",
        CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: "1",
      },
    };
  },
  // The input box (a rule, then the ❯ prompt; a dialog, trust or login, has none), once its MCP client
  // has herd's tools: the box comes first, and a turn typed before has no fleet_reply.
  ready: (screen, hasTools) => hasTools && INPUT_BOX.test(screen),
  dialog: dialogOf,
  turnFailure(dir) {
    const failed = readHookFile(turnFileOf(dir));
    if (failed?.hook_event_name !== "StopFailure") return null;
    const error = typeof failed.error === "string" ? failed.error.slice(0, 64) : "unknown";
    const details = typeof failed.error_details === "string" && failed.error_details ? `: ${failed.error_details.slice(0, 500)}` : "";
    return { exhausted: EXHAUSTED.has(error), detail: `Claude Code ended the turn on its model's error ${error}${details}` };
  },
  // The Stop hook's input: the last message when this Claude Code gives it, else the session transcript (JSONL).
  lastAnswer(dir) {
    const done = readHookFile(turnFileOf(dir));
    if (typeof done?.last_assistant_message === "string") return done.last_assistant_message.trim();
    return typeof done?.transcript_path === "string" ? lastAssistantText(readFileSync(done.transcript_path, "utf8")) : null;
  },
};

const RULE = /^─{20,}$/;
/** Every dialog of Claude Code 2.1.332 ends on a line of keys that offers Esc (its permission, auto-mode and MCP dialogs: cli.js). */
const DIALOG_KEYS = /Esc to cancel/;
const DIALOG_MAX = 2000;

/**
 * The dialog at the bottom of the screen, where the input box would be: the lines from the rule above it to its
 * keys. The question is its last line that asks one ("Do you want to proceed?"), else its title.
 */
export function dialogOf(screen: string): { question: string; dialog: string } | null {
  const lines = screen.split("\n").map((l) => l.trim());
  const keys = lines.findLastIndex((l) => DIALOG_KEYS.test(l));
  if (keys < 0 || INPUT_BOX.test(lines.slice(keys).join("\n"))) return null;
  const text = lines.slice(lines.findLastIndex((l, i) => i < keys && RULE.test(l)) + 1, keys).filter((l) => l && !/^[╌─]+$/.test(l));
  if (!text.length) return null;
  return { question: text.findLast((l) => l.endsWith("?")) ?? text[0]!, dialog: text.join("\n").slice(0, DIALOG_MAX) };
}

/** The text the assistant wrote since the last prompt a user typed (tool results are user entries too, with no text prompt). */
export function lastAssistantText(jsonl: string): string | null {
  const entries = jsonl.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
  const prompt = entries.findLastIndex((e) => e.type === "user" && typeof e.message?.content === "string");
  const texts = entries
    .slice(prompt + 1)
    .filter((e) => e.type === "assistant" && Array.isArray(e.message?.content))
    .flatMap((e) => e.message.content.filter((b: any) => b.type === "text").map((b: any) => b.text as string));
  return texts.length ? texts.join("\n").trim() : null;
}
