// Codex as a worker: its own CODEX_HOME with a config.toml whose model
// provider is the herd's Responses surface (an API-key provider: no sign-in
// screen), the MCP server "herd" with the worker's credential, and the fleet's
// instructions in AGENTS.md.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentAdapter, INSTRUCTIONS } from "./adapter.ts";

const toml = (s: string) => JSON.stringify(s);

export const codex: AgentAdapter = {
  hookEndsEveryTurn: false,
  prepare({ herdUrl, token, cwd, dir, argv, env }) {
    const home = join(dir, "codex");
    mkdirSync(home, { recursive: true, mode: 0o700 });
    const config = [
      `model_provider = "herd"`,
      `approval_policy = "never"`,
      `check_for_update_on_startup = false`,
      `[model_providers.herd]`,
      `name = "herd"`,
      `base_url = ${toml(`${herdUrl}/v1`)}`,
      `wire_api = "responses"`,
      `env_key = "HERD_MODEL_KEY"`,
      `[mcp_servers.herd]`,
      `url = ${toml(`${herdUrl}/mcp`)}`,
      `bearer_token_env_var = "HERD_TOKEN"`,
      `[projects.${toml(cwd)}]`,
      `trust_level = "trusted"`,
      ``,
    ].join("\n");
    writeFileSync(join(home, "config.toml"), config, { mode: 0o600 });
    writeFileSync(join(home, "AGENTS.md"), `${INSTRUCTIONS}\n`, { mode: 0o600 });
    return { argv, env: { ...env, CODEX_HOME: home, HERD_MODEL_KEY: env.OPENAI_API_KEY ?? token } };
  },
  ready: (screen, calledHerd) => calledHerd && /context left|Ctrl\+J|esc to interrupt|send\b/i.test(screen) && !/sign in/i.test(screen),
  lastAnswer: () => null,
};
