// An agent adapter: what herd writes for one kind of worker at spawn so it runs
// on the herd's models and keeps the fleet's contract with no hand-written
// config (MCP entry, instructions, turn-done hook, first-run state), how to tell
// the worker is ready for a turn, and where its answer is when it only said the
// turn is done. One adapter per profile `kind`.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface WorkerSetup {
  herdUrl: string;
  sessionId: string;
  /** The worker's own fleet credential (HERD_TOKEN). */
  token: string;
  cwd: string;
  /** A private folder (0700) for this worker alone: its config, home and transcripts; removed when it ends. */
  dir: string;
  /** The profile's command (resolved) and arguments. */
  argv: string[];
  /** The environment herd built for it (environment.ts). */
  env: Record<string, string>;
  /** What its profile lets it do without a prompt (agents.profiles.<name>.permissions), in its agent's rule syntax. */
  permissions: Permissions;
}

export interface Permissions {
  allow: string[];
  deny: string[];
}

/** A prompt the agent shows and waits on (an approval dialog): its question, and the dialog's text for the lead. */
export interface Dialog {
  question: string;
  dialog: string;
}

export interface Launch {
  argv: string[];
  env: Record<string, string>;
}

export interface AgentAdapter {
  /** The text herd types for a turn: its content, and for an agent that reads it with a model the turn's id to reply with. */
  frame(content: string, turn: string): string;
  /**
   * The keys (tmux key names) that stop the agent's work on a turn and that empty its input (where an interrupted
   * turn's text comes back), or null when herd knows none (the program's own affair).
   */
  interrupt: { stop: string[]; clear: string[] } | null;
  /** Where the worker stands, read from its screen: on a turn, at its prompt with text in it, or at an empty prompt. Asked only when `interrupt` is set. */
  phase(screen: string): "working" | "typed" | "idle";
  /** Read as herd types a turn: the agent's own id of the turn it is on or last took (null: none known). */
  turnInProgress(dir: string): string | null;
  /**
   * Whether the turn-done heard now ends the open turn (`content`, its framed text, typed while the agent was on
   * `typedDuring`). An agent's hook fires after every turn, one it ended with fleet_reply too, so
   * it may come late, for a turn already replied to while the next was typed: that must not end the next.
   */
  endsTurn(dir: string, turn: { content: string; typedDuring: string | null }): boolean;
  prepare(setup: WorkerSetup): Launch;
  /** The worker is ready to take a turn: judged from its pane's screen and whether its MCP client has listed herd's tools yet. */
  ready(screen: string, hasTools: boolean): boolean;
  /** The answer of the worker's last turn from its own record, or null to read it from the screen. */
  lastAnswer(dir: string): string | null;
  /** The dialog its screen shows, waiting for someone at the terminal (null: none, or none this agent is known to show). */
  dialog(screen: string): Dialog | null;
  /** How the worker's last turn failed, as its turn-done hook kept it (null: it did not, or this agent never says). */
  turnFailure(dir: string): TurnFailure | null;
}

/** A turn the agent ended on an error from its model's API: `exhausted` when the credential or its limits ran out. */
export interface TurnFailure {
  exhausted: boolean;
  detail: string;
}

/**
 * A turn-done hook's call to herd, run by the agent in the worker's environment (HERD_*): the turn is
 * done, so one it ended without fleet_reply is answered from what the hook kept. Failing must not hold the worker up.
 */
export const TURN_DONE_CALL = `curl -s -m 10 -o /dev/null -X POST -H "authorization: Bearer $HERD_TOKEN" -H "content-type: application/json" -d '{"turnDone":true}' "$HERD_URL/sessions/$HERD_SESSION_ID/reply" || true`;

/** Where a turn-done hook keeps what the agent handed it about the turn (adapters set HERD_TURN_FILE to it). */
export const turnFileOf = (dir: string) => join(dir, "turn-done.json");

/** The JSON a hook kept, or null when it kept none (yet). */
export function readHookFile(path: string): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

/** What every worker is told, whatever its kind. */
export const INSTRUCTIONS = `You are a worker in a herd agent fleet: each message you get is a turn from your lead.
End every turn by calling the MCP tool fleet_reply (server "herd") with your answer as its content; the lead sees nothing else you write.
If you need the lead's decision before you can finish, call fleet_ask with your question: it returns the lead's answer, then carry on and reply.
When a turn ends with its id ([herd turn t-…]), pass that id as "turn" to fleet_reply and fleet_ask, so your answer goes to that turn and no other.`;

/** A turn with its id on a last line of its own, for the model to name in fleet_reply and fleet_ask (INSTRUCTIONS). */
export const withTurnId = (content: string, turn: string) => `${content}\n\n[herd turn ${turn}: pass turn "${turn}" to fleet_reply]`;

/** Shown by Claude Code and Codex while a turn runs ("esc to interrupt"), gone once they are back at their prompt. */
export const WORKING = /esc to interrupt/i;
