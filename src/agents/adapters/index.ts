// The adapter for a profile's kind.
import type { AgentAdapter } from "./adapter.ts";
import { claudeCode } from "./claude-code.ts";
import { cli, readyWhen } from "./cli.ts";
import { codex } from "./codex.ts";

export type AgentKind = "cli" | "claude-code" | "codex";

const ADAPTERS: Record<AgentKind, AgentAdapter> = { cli, "claude-code": claudeCode, codex };

/** The adapter for a profile: its kind's, a `cli` one with its declared ready screen. */
export const adapterFor = (profile: { kind: AgentKind; ready?: { screen: string } }): AgentAdapter =>
  profile.kind === "cli" && profile.ready ? readyWhen(profile.ready.screen) : ADAPTERS[profile.kind];
