// Claude Code as a worker. Its config dir (CLAUDE_CONFIG_DIR) is the worker's
// own, with first-run state settled so the TUI opens straight on its prompt:
// onboarding done, the herd key approved, the cwd trusted. The MCP server
// "herd" (always loaded, its tools allowed) carries the worker's credential, the
// fleet's instructions go into the system prompt, and a Stop hook tells herd the
// moment a turn ends, so one that ended without fleet_reply is answered from the
// session transcript (JSONL under the config dir), not from the screen.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentAdapter, INSTRUCTIONS } from "./adapter.ts";

/** The hook runs in the worker's environment (HERD_*); a failed call must not hold the worker up. */
const TURN_DONE = `curl -s -m 10 -o /dev/null -X POST -H "authorization: Bearer $HERD_TOKEN" -H "content-type: application/json" -d '{"turnDone":true}' "$HERD_URL/sessions/$HERD_SESSION_ID/reply" || true`;

const configDirOf = (dir: string) => join(dir, "claude");

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value, null, 2), { mode: 0o600 });

export const claudeCode: AgentAdapter = {
  prepare({ herdUrl, token, cwd, dir, argv, env }) {
    const configDir = configDirOf(dir);
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    // The herd key the profile names; an open herd takes any key, so the worker's own credential does.
    const key = env.ANTHROPIC_API_KEY ?? token;
    writeJson(join(configDir, ".claude.json"), {
      hasCompletedOnboarding: true,
      // Claude Code asks once about a key from the environment, remembering its last 20 characters.
      customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
      projects: { [cwd]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    });
    writeJson(join(configDir, "settings.json"), {
      permissions: { allow: ["mcp__herd"] },
      hooks: { Stop: [{ hooks: [{ type: "command", command: TURN_DONE }] }] },
    });
    const mcp = join(dir, "mcp.json");
    writeJson(mcp, { mcpServers: { herd: { type: "http", url: `${herdUrl}/mcp`, headers: { authorization: `Bearer ${token}` }, alwaysLoad: true } } });
    return {
      argv: [...argv, "--mcp-config", mcp, "--append-system-prompt", INSTRUCTIONS],
      env: {
        ...env,
        ANTHROPIC_API_KEY: key,
        CLAUDE_CONFIG_DIR: configDir,
        // Workers run on the herd's models: nothing goes to Anthropic's services.
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
    };
  },
  // The prompt's footer, shown once the TUI takes input.
  ready: (screen) => /\? for shortcuts|bypass permissions|accept edits|plan mode/i.test(screen),
  lastAnswer(dir) {
    const file = newestTranscript(join(configDirOf(dir), "projects"));
    return file ? lastAssistantText(readFileSync(file, "utf8")) : null;
  },
};

function newestTranscript(root: string): string | null {
  let newest: { path: string; at: number } | null = null;
  const walk = (folder: string) => {
    for (const entry of safeList(folder)) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".jsonl")) {
        const at = statSync(path).mtimeMs;
        if (!newest || at > newest.at) newest = { path, at };
      }
    }
  };
  walk(root);
  return (newest as { path: string } | null)?.path ?? null;
}

function safeList(folder: string) {
  try {
    return readdirSync(folder, { withFileTypes: true });
  } catch {
    return [];
  }
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
