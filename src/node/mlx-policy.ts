// The MLX supervisor's decisions, apart from its processes so they can be
// tested alone: the command line for a server, the memory gate before a start,
// how a health poll reads, and when a crashed server may start again.
import type { NodeEntry } from "../config/schema.ts";
import { expandHome } from "./mlx-model-files.ts";

export type MlxServerEntry = NodeEntry["mlx"][number];

/** Restart delays double from BACKOFF_BASE_MS with each crash in the window (the quarantine ends the doubling). */
export const BACKOFF_BASE_MS = 500;
/** CRASH_LIMIT crashes within CRASH_WINDOW_MS quarantine a server for QUARANTINE_MS (seed 000's numbers). */
export const CRASH_LIMIT = 5;
export const CRASH_WINDOW_MS = 300_000;
export const QUARANTINE_MS = 600_000;
/**
 * A running server that has not answered its health poll for this long is restarted. Longer than the
 * router's default wall-clock limit, so a server busy with one long answer is not killed for it.
 */
export const HANG_RESTART_MS = 600_000;

/** Why a server may lack a flag herd would pass, for the reason it reports. */
const ORIGIN: Record<string, string> = {
  // Seed 000's flag needs Ollama Herd's setup-mlx.sh patch; no mlx-lm release has it.
  "--kv-bits": "stock mlx-lm never had it",
  // mlx_lm/server.py 0.31.0 main() added both.
  "--prompt-cache-size": "mlx-lm 0.31.0 added it",
  "--prompt-cache-bytes": "mlx-lm 0.31.0 added it",
};

export interface ServerCommand {
  args: string[];
  /** What the configured server asks for that the installed mlx_lm.server does not take, each said as its reason. */
  leftOut: string[];
}

/**
 * `mlx_lm.server` arguments for one configured server. `accepts`: the options the installed server lists
 * in its --help; an optional flag it lacks is left out (an unknown one is argparse's exit 2, a crash loop).
 * null (its help could not be read) passes all that is configured.
 */
export function serverArgs(server: MlxServerEntry, bindHost: string, accepts: ReadonlySet<string> | null): ServerCommand {
  const args = ["--model", expandHome(server.model), "--port", String(server.port), "--host", bindHost];
  const leftOut: string[] = [];
  const optional: [key: string, flag: string, value: string | number | undefined][] = [
    ["kvBits", "--kv-bits", server.kvBits || undefined],
    ["promptCacheSize", "--prompt-cache-size", server.promptCacheSize],
    ["promptCacheBytes", "--prompt-cache-bytes", server.promptCacheBytes],
    ["draftModel", "--draft-model", server.draftModel && expandHome(server.draftModel)],
  ];
  for (const [key, flag, value] of optional) {
    if (value === undefined) continue;
    if (!accepts || accepts.has(flag)) args.push(flag, String(value));
    else leftOut.push(`${key} ${value} left out: this mlx_lm.server has no ${flag}${ORIGIN[flag] ? ` (${ORIGIN[flag]})` : ""}`);
  }
  return { args, leftOut };
}

/** Why a server may not start now (its weights plus the headroom do not fit in free memory), or null. */
export function memoryGate(modelSizeGb: number, headroomGb: number, availableGb: number): string | null {
  const needed = modelSizeGb + headroomGb;
  if (needed <= availableGb) return null;
  return `memory gate: ${needed.toFixed(1)} GB needed, ${availableGb.toFixed(0)} GB available`;
}

/** What a crash leads to: the crash times to remember, and when the next start may happen. */
export interface AfterCrash {
  crashes: number[];
  restartInMs: number;
  /** Set when the crash loop is quarantined: the reason to report. */
  quarantine: string | null;
}

/** `crashes` are the earlier crash times (ms epoch); `now` is this one. */
export function afterCrash(crashes: readonly number[], now: number): AfterCrash {
  const recent = [...crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
  if (recent.length >= CRASH_LIMIT) {
    const reason = `${recent.length} crashes within ${CRASH_WINDOW_MS / 1000}s; next restart in ${QUARANTINE_MS / 1000}s`;
    // A fresh start after the quarantine: the next crash counts from one again.
    return { crashes: [], restartInMs: QUARANTINE_MS, quarantine: reason };
  }
  return { crashes: recent, restartInMs: BACKOFF_BASE_MS * 2 ** (recent.length - 1), quarantine: null };
}

/** What one GET /v1/models found. */
export type Poll = { ok: true } | { ok: false; refused: boolean; detail: string };

/** A started server's reason until it listens. */
export const STARTING_REASON = "not listening yet (mlx-lm 0.31.2 and older load the model first)";

export type HealthStatus = { status: "healthy" | "starting" | "loading" | "unhealthy"; reason: string };

/**
 * A poll's meaning depends on the server's history. Before it listens, a refused connection is a server starting
 * (mlx-lm 0.31.2 and older load the model first); listening, it is loading until a completion has answered
 * (from 0.31.3 it listens at once and loads after); ready, it is healthy. A refusal after it listened, or any
 * poll that times out, is a sick server.
 */
export function readPoll(poll: Poll, listened: boolean, ready: boolean): HealthStatus {
  if (poll.ok && ready) return { status: "healthy", reason: "" };
  if (poll.ok) return { status: "loading", reason: "listening; loading the model (a one-token completion has not answered yet)" };
  if (poll.refused && !listened) return { status: "starting", reason: STARTING_REASON };
  return { status: "unhealthy", reason: poll.detail };
}

/** Whether a server that stopped answering at `unhealthySince` should be restarted now. */
export function hungTooLong(unhealthySince: number | null, now: number): boolean {
  return unhealthySince !== null && now - unhealthySince >= HANG_RESTART_MS;
}
