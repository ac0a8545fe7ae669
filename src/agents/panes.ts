// What the agent fleet needs from a terminal multiplexer. tmux (tmux.ts) is the
// one herd ships; another backend (herdr) is one more class behind this interface.

export interface PaneSpec {
  /** The workspace name: herd uses the worker's session id, so the raw lists line up with the roster. */
  name: string;
  cwd: string;
  argv: string[];
  /** The whole environment of the process: the backend adds nothing of its own (no TMUX, no TMUX_PANE). */
  env: Record<string, string>;
}

export interface PaneInfo {
  paneId: string;
  /** The workspace (tmux session) the pane belongs to. */
  workspace: string;
  pid: number;
  dead: boolean;
  exitStatus: number | null;
  /** The signal that ended it, when one did. */
  exitSignal: number | null;
  command: string;
}

export interface WorkspaceInfo {
  name: string;
  createdAt: number;
  windows: number;
  attached: boolean;
}

/** The pane is not there (any more): the caller's session is gone. */
export class PaneGone extends Error {}

/** The backend did not answer in time. */
export class BackendTimeout extends Error {}

export interface PaneBackend {
  readonly kind: string;
  /** Where the fleet's panes live (the tmux socket name), shown in /healthz. */
  readonly location: string;
  /** The backend's version; throws when it cannot be reached. */
  version(): Promise<string>;
  spawn(spec: PaneSpec, timeoutMs: number): Promise<{ paneId: string; pid: number }>;
  /** Types `text` into the pane as one paste, then Enter. */
  sendText(paneId: string, text: string): Promise<void>;
  /** Presses `keys` (tmux key names, "Escape") in the pane, as a user at it would. */
  sendKeys(paneId: string, keys: string[]): Promise<void>;
  /** The last `lines` lines of what the pane shows, wrapped lines joined. */
  captureTail(paneId: string, lines: number): Promise<string>;
  /** Ends the pane and its process; a pane already gone is no error. */
  kill(paneId: string): Promise<void>;
  panes(): Promise<PaneInfo[]>;
  workspaces(): Promise<WorkspaceInfo[]>;
  /** Ends one workspace (by name) and its panes; the backend's server too when it was the last. */
  killWorkspace(name: string): Promise<void>;
  /** Ends every pane of the fleet. */
  shutdown(): Promise<void>;
}
