// The adapter for a profile's kind.
import type { AgentAdapter } from "./adapter.ts";
import { claudeCode } from "./claude-code.ts";
import { cli } from "./cli.ts";
import { codex } from "./codex.ts";

export type AgentKind = "cli" | "claude-code" | "codex";

const ADAPTERS: Record<AgentKind, AgentAdapter> = { cli, "claude-code": claudeCode, codex };

export const adapterFor = (kind: AgentKind): AgentAdapter => ADAPTERS[kind];
