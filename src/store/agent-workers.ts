// The agent fleet's roster in the store: a row per live worker, written at spawn and
// removed when it stops or exits, so a router that was killed (SIGKILL, a crash) finds
// the workers it left on its next start, whatever port that is (agents/fleet.ts).
import type { Database } from "bun:sqlite";
import { recordEvent } from "./db.ts";

export interface WorkerRow {
  sessionId: string;
  profile: string;
  role: string;
  /** The tmux server (`tmux -L <socket>`) the worker's pane is on. */
  tmuxSocket: string;
  paneId: string;
  /** The pane's first process: its process group is the worker's. */
  panePid: number;
  /** The router that spawned it: rows of a router still running are not its leftovers. */
  routerPid: number;
  startedAt: number;
}

type Stored = { session_id: string; profile: string; role: string; tmux_socket: string; pane_id: string; pane_pid: number; router_pid: number; started_at: number };

export class WorkerRoster {
  constructor(private readonly db: Database) {}

  // A write the store refuses (disk full) is logged, not thrown: the worker runs on, only a crash would forget it.
  add(w: WorkerRow): void {
    recordEvent(this.db, "INSERT OR REPLACE INTO agent_workers (session_id, profile, role, tmux_socket, pane_id, pane_pid, router_pid, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
      w.sessionId,
      w.profile,
      w.role,
      w.tmuxSocket,
      w.paneId,
      w.panePid,
      w.routerPid,
      w.startedAt,
    ]);
  }

  remove(sessionId: string): void {
    recordEvent(this.db, "DELETE FROM agent_workers WHERE session_id = ?", [sessionId]);
  }

  all(): WorkerRow[] {
    return this.db
      .query<Stored, []>("SELECT * FROM agent_workers ORDER BY started_at")
      .all()
      .map((r) => ({ sessionId: r.session_id, profile: r.profile, role: r.role, tmuxSocket: r.tmux_socket, paneId: r.pane_id, panePid: r.pane_pid, routerPid: r.router_pid, startedAt: r.started_at }));
  }
}
