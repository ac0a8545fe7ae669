// The SessionManager: the fleet's workers (members). It spawns a worker from a
// profile into its own pane with its own credential, watches the panes so a
// worker that exits is noticed (its credential revoked, its open turn failed),
// and stops workers. Turns and replies are the MessageService's (messages.ts).
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { expandPath } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { log } from "../log.ts";
import type { WorkerRoster } from "../store/agent-workers.ts";
import { adapterFor } from "./adapters/index.ts";
import type { AgentAdapter, Dialog, TurnFailure } from "./adapters/adapter.ts";
import { Answer, answer, badRequest, refuse } from "./answers.ts";
import { type Principal, ROLES, type Role } from "./authz.ts";
import type { Credentials } from "./credentials.ts";
import { subscriptionLeaks, workerEnv } from "./environment.ts";
import type { SpawnInput } from "./inputs.ts";
import { BackendTimeout, type PaneBackend, type PaneInfo } from "./panes.ts";
import { endWorkerProcesses } from "./processes.ts";
import { newId, type Turn } from "./rendezvous.ts";
import { NotARepo, TICKET, worktreeFor } from "./worktrees.ts";

export interface HeldReply {
  msgId: string;
  content: string;
  /** The turn the worker named, when it named one that was over (messages.ts: kept out of the open turn). */
  turn?: string;
}

export interface Member {
  sessionId: string;
  /** null while the pane is being created. */
  paneId: string | null;
  /** The pane's first process, whose process group is the worker's. */
  panePid: number | null;
  profile: string;
  role: Role;
  cwd: string;
  owner: string;
  ticket: string | null;
  worktree: string | null;
  branch: string | null;
  startedAt: number;
  exited: { status: number | null; at: number } | null;
  /** What the pane showed last before it was cleared away (an exited worker's, for diagnosis). */
  lastOutput: string | null;
  /** The worker's private folder (its agent's config, home and transcripts). */
  dir: string;
  adapter: AgentAdapter;
  /** The agent's own id of the turn it was on when herd typed the open one (adapter.turnInProgress). */
  typedDuring: string | null;
  /** Its MCP client has listed herd's tools (tools/list). */
  hasTools: boolean;
  /** The turn in progress (messages.ts). */
  turn: Turn | null;
  /** herd is stopping the agent's work on a turn it gave up (interrupt): not idle yet. */
  stopping: boolean;
  /** A turn herd gave up that the agent may still be on (its interrupt not seen to work): a reply naming no turn may be that one's. */
  unsettled: string | null;
  /** Replies nobody was waiting for, until a lead drains them. */
  inbox: HeldReply[];
}

type MemberState = "starting" | "idle" | "working" | "exited";

export const stateOf = (m: Member): MemberState => (m.exited ? "exited" : !m.paneId ? "starting" : m.turn || m.stopping ? "working" : "idle");

export interface SessionDeps {
  backend: () => PaneBackend;
  credentials: Credentials;
  config: () => Config;
  /** The config file's folder: relative profile cwds are relative to it. */
  configDir: () => string;
  herdUrl: () => string;
  /** The roster's copy in the store, so a router killed without a shutdown finds its workers (fleet.ts). */
  roster: WorkerRoster;
  /** A worker stopped or exited: its open turn fails with `detail`. */
  onGone: (member: Member, detail: string) => void;
  /** What the screen of a worker on a turn shows: a dialog waiting for someone at its terminal, or none. */
  onScreen: (member: Member, dialog: Dialog | null) => void;
}

const MONITOR_MS = 500;
/** How often a starting worker's screen is read for its adapter's ready sign. */
const READY_POLL_MS = 200;
/** Lines of a pane kept as its last output. */
const LAST_OUTPUT_LINES = 40;
/** How long herd waits for an interrupted agent to be back at its prompt, and how often it presses the keys again meanwhile. */
const INTERRUPT_MS = 10_000;
const INTERRUPT_AGAIN_MS = 3000;
/** A pane's height (tmux.ts): the lines a dialog is looked for in. */
const SCREEN_LINES = 50;

/** A worker's own folder (its agent's config, instructions and credential files), removed when it ends. */
export function workerDir(dataDir: string, sessionId: string): string {
  return join(dataDir, "workers", sessionId);
}

export class SessionManager {
  private members = new Map<string, Member>();
  private monitor: Timer | null = null;
  private checking = false;

  constructor(private readonly deps: SessionDeps) {}

  get(sessionId: string): Member | undefined {
    return this.members.get(sessionId);
  }

  all(): Member[] {
    return [...this.members.values()];
  }

  /** Live workers per profile against the profile's capacity. */
  capacity(): Record<string, { capacity: number; running: number }> {
    const profiles = this.deps.config().agents.profiles;
    return Object.fromEntries(Object.entries(profiles).map(([name, p]) => [name, { capacity: p.capacity, running: this.running(name) }]));
  }

  async spawn(caller: Principal, input: SpawnInput): Promise<Answer> {
    const config = this.deps.config();
    const role = input.role ?? "dev";
    if (!(ROLES as readonly string[]).includes(role)) return refuse(400, "unknown_role", `role "${role}" is not one of ${ROLES.join(", ")}`);
    const ticket = ticketOf(input);
    if (ticket instanceof Answer) return ticket;
    const profiles = config.agents.profiles;
    const profileName = input.profile ?? config.agents.defaultProfile ?? Object.keys(profiles)[0];
    // Own keys only: a client's "__proto__" or "constructor" names no profile.
    const profile = profileName !== undefined && Object.hasOwn(profiles, profileName) ? profiles[profileName] : undefined;
    if (!profile) {
      const known = Object.keys(profiles);
      return refuse(400, "unknown_profile", known.length ? `profile "${profileName}" is not one of ${known.join(", ")}` : "no profiles are configured (agents.profiles in herd.config.ts)");
    }
    if (this.running(profileName!) >= profile.capacity) {
      return refuse(503, "no_capacity", `profile "${profileName}" already runs ${profile.capacity} worker(s), its capacity; stop one (DELETE /members/{paneId}) or raise agents.profiles.${profileName}.capacity`);
    }
    const leaks = subscriptionLeaks(config, profile);
    if (leaks.length) {
      return refuse(403, "subscription_boundary", `profile "${profileName}" would hand the worker ${leaks.join(", ")} from the router's environment; workers use the herd's models, so remove it from agents.profiles.${profileName}.env`);
    }
    let cwd = expandPath(input.cwd ?? profile.cwd ?? ".", this.deps.configDir());
    if (!isDirectory(cwd)) return badRequest(`cwd: ${cwd} is not a directory on the router's machine`);
    const command = profile.command.includes("/") ? expandPath(profile.command, this.deps.configDir()) : Bun.which(profile.command);
    if (!command || !existsSync(command)) return refuse(502, "spawn_failed", `profile "${profileName}": command "${profile.command}" is not on the router's PATH`);

    // The slot is taken before the first await, so concurrent spawns cannot overshoot the capacity.
    const sessionId = newId("w");
    const member: Member = {
      sessionId,
      paneId: null,
      panePid: null,
      profile: profileName!,
      role: role as Role,
      cwd,
      owner: caller.kind,
      ticket,
      worktree: null,
      branch: null,
      startedAt: Date.now(),
      exited: null,
      lastOutput: null,
      dir: workerDir(config.server.dataDir, sessionId),
      adapter: adapterFor(profile),
      hasTools: false,
      typedDuring: null,
      turn: null,
      stopping: false,
      unsettled: null,
      inbox: [],
    };
    this.members.set(member.sessionId, member);
    const failed = (a: Answer) => {
      this.members.delete(member.sessionId);
      this.deps.credentials.revoke(member.sessionId);
      removeDir(member);
      return a;
    };
    if (ticket && wantsWorktree(input)) {
      try {
        const tree = await worktreeFor(cwd, ticket, config.server.dataDir);
        member.worktree = cwd = member.cwd = tree.path;
        member.branch = tree.branch;
      } catch (e) {
        return failed(e instanceof NotARepo ? badRequest(`worktree: ${e.message}`) : refuse(502, "worktree_failed", (e as Error).message));
      }
    }
    const token = this.deps.credentials.issue(member.sessionId, member.role);
    const herdUrl = this.deps.herdUrl();
    const env = workerEnv(config, profile, { herdUrl, sessionId: member.sessionId, token, role: member.role });
    const deadline = Date.now() + config.agents.spawnTimeoutMs;
    let launch;
    try {
      mkdirSync(member.dir, { recursive: true, mode: 0o700 });
      launch = member.adapter.prepare({ herdUrl, sessionId: member.sessionId, token, cwd, dir: member.dir, argv: [command, ...profile.args], env, permissions: profile.permissions });
    } catch (e) {
      return failed(refuse(502, "spawn_failed", `cannot prepare the worker's files in ${member.dir}: ${(e as Error).message}`));
    }
    let pane: { paneId: string; pid: number };
    try {
      pane = await this.deps.backend().spawn({ name: member.sessionId, cwd, ...launch }, config.agents.spawnTimeoutMs);
      member.panePid = pane.pid;
    } catch (e) {
      if (e instanceof BackendTimeout) return failed(refuse(502, "spawn_timeout", `the worker's pane did not start within ${config.agents.spawnTimeoutMs} ms (agents.spawnTimeoutMs)`));
      return failed(refuse(502, "spawn_failed", (e as Error).message));
    }
    // In the roster from its first moment, so a router that dies while it gets ready leaves nothing unseen.
    this.deps.roster.add({ sessionId: member.sessionId, profile: member.profile, role: member.role, tmuxSocket: this.deps.backend().location, paneId: pane.paneId, panePid: pane.pid, routerPid: process.pid, startedAt: member.startedAt });
    const unready = await this.untilReady(member, pane.paneId, deadline, config.agents.spawnTimeoutMs);
    if (unready) {
      await this.deps.backend().kill(pane.paneId).catch(() => {});
      this.deps.roster.remove(member.sessionId);
      await endWorkerProcesses(member.sessionId, pane.pid);
      return failed(unready);
    }
    member.paneId = pane.paneId; // only now is it "idle": ready to take a turn
    this.watch();
    log.info(`agents: spawned ${member.sessionId} (${member.profile}, ${member.role}) in ${member.paneId}`);
    return answer(spawnView(member), 201);
  }

  /** Tears a worker down, its detached children too; a pane no worker has is nothing to do. */
  async stop(paneId: string): Promise<void> {
    const member = this.all().find((m) => m.paneId === paneId);
    if (!member) return;
    this.members.delete(member.sessionId);
    this.end(member, "the worker was stopped");
    await endWorkerProcesses(member.sessionId, member.exited ? null : member.panePid);
    await this.deps.backend().kill(paneId);
    removeDir(member);
    log.info(`agents: stopped ${member.sessionId}`);
  }

  /** The roster joined with what the backend sees of each pane. */
  async roster(): Promise<Record<string, unknown>[]> {
    const panes = await this.panesOrNone();
    return this.all().map((m) => rosterView(m, panes.find((p) => p.paneId === m.paneId)));
  }

  async status(sessionId: string): Promise<Answer> {
    const m = this.members.get(sessionId);
    if (!m) return sessionNotFound(sessionId);
    const pane = (await this.panesOrNone()).find((p) => p.paneId === m.paneId);
    return answer({ ...rosterView(m, pane), ready: stateOf(m) === "idle", turn: m.turn?.view() ?? null, inbox: m.inbox.length });
  }

  /** Stops watching and ends every pane (the router is stopping). */
  async shutdown(): Promise<void> {
    if (this.monitor) clearInterval(this.monitor);
    this.monitor = null;
    const members = this.all();
    this.members.clear();
    for (const m of members) this.end(m, "the router is stopping");
    await Promise.all(members.map((m) => endWorkerProcesses(m.sessionId, m.exited ? null : m.panePid)));
    members.forEach(removeDir);
  }

  /** The worker's MCP client listed herd's tools. */
  listedTools(sessionId: string): void {
    const member = this.members.get(sessionId);
    if (member) member.hasTools = true;
  }

  /** herd is about to type `turn` into the worker's pane: the text to type. */
  typing(member: Member, turn: Turn): string {
    member.typedDuring = member.adapter.turnInProgress(member.dir);
    return member.adapter.frame(turn.content, turn.id);
  }

  /** How the worker's last turn failed, as its agent's hook said (null: it did not say so). */
  turnFailure(member: Member): TurnFailure | null {
    return recorded(() => member.adapter.turnFailure(member.dir));
  }

  /** Whether the worker's turn-done heard now ends its open turn (not a late one for the turn before). */
  endsTurn(member: Member, turn: Turn): boolean {
    return member.adapter.endsTurn(member.dir, { content: member.adapter.frame(turn.content, turn.id), typedDuring: member.typedDuring });
  }

  /**
   * Stops the agent's work on a turn herd gave up (its adapter's interrupt keys, pressed only while it
   * works; then its input emptied) and waits, bounded, until it is back at an empty prompt: whether it is.
   * False for a kind herd knows no interrupt for, or a pane gone.
   */
  async interrupt(member: Member): Promise<boolean> {
    const keys = member.adapter.interrupt;
    if (!keys || !member.paneId || member.exited) return false;
    const backend = this.deps.backend();
    const deadline = Date.now() + INTERRUPT_MS;
    let pressAt = 0;
    let pressed = "";
    let idleSeen = 0;
    while (Date.now() < deadline) {
      const screen = await backend.captureTail(member.paneId, LAST_OUTPUT_LINES).catch(() => null);
      if (screen === null) return false;
      // Twice in a row: a turn just pasted may not show as running yet.
      const phase = member.adapter.phase(screen);
      idleSeen = phase === "idle" ? idleSeen + 1 : 0;
      if (idleSeen >= 2) return true;
      const press = phase === "working" ? keys.stop : phase === "typed" ? keys.clear : [];
      if (press.length && (phase !== pressed || Date.now() >= pressAt)) {
        pressed = phase;
        await backend.sendKeys(member.paneId, press).catch(() => {});
        pressAt = Date.now() + INTERRUPT_AGAIN_MS;
      }
      await Bun.sleep(READY_POLL_MS);
    }
    return false;
  }

  /** The answer of the worker's last turn from its agent's own record (null: read the screen). */
  lastAnswer(member: Member): string | null {
    return recorded(() => member.adapter.lastAnswer(member.dir));
  }

  /**
   * Null once the pane shows its adapter's ready sign; else the refusal, with the pane's last
   * output: the worker exited first (a dead pane stays, remain-on-exit, until its screen is read), or the time ran out.
   */
  private async untilReady(member: Member, paneId: string, deadline: number, timeoutMs: number): Promise<Answer | null> {
    const backend = this.deps.backend();
    for (;;) {
      const pane = (await this.panesOrNone()).find((p) => p.paneId === paneId);
      const screen = pane ? await backend.captureTail(paneId, LAST_OUTPUT_LINES).catch(() => "") : "";
      const lastOutput = screen.trimEnd();
      if (!pane || pane.dead) return refuse(502, "spawn_failed", `${exitDetail(pane)} before it was ready to take a turn`, { lastOutput });
      if (member.adapter.ready(screen, member.hasTools)) return null;
      if (Date.now() >= deadline) return refuse(502, "spawn_timeout", `the worker was not ready to take a turn within ${timeoutMs} ms (agents.spawnTimeoutMs)`, { lastOutput });
      await Bun.sleep(READY_POLL_MS);
    }
  }

  private running(profile: string): number {
    return this.all().filter((m) => m.profile === profile && !m.exited).length;
  }

  private end(member: Member, detail: string): void {
    this.deps.credentials.revoke(member.sessionId);
    this.deps.roster.remove(member.sessionId);
    removeDir(member); // at once: it holds the worker's credential; again once its processes are gone
    this.deps.onGone(member, detail);
  }

  private async panesOrNone(): Promise<PaneInfo[]> {
    return this.deps.backend().panes().catch(() => []);
  }

  // Polling is cheap (one tmux call) and runs only while some worker is alive.
  private watch(): void {
    this.monitor ??= setInterval(() => void this.check(), MONITOR_MS);
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const live = this.all().filter((m) => m.paneId && !m.exited);
      if (!live.length) {
        clearInterval(this.monitor!);
        this.monitor = null;
        return;
      }
      const panes = await this.deps.backend().panes();
      for (const m of live) {
        const pane = panes.find((p) => p.paneId === m.paneId);
        if (pane && !pane.dead) {
          if (m.turn?.delivered) this.deps.onScreen(m, m.adapter.dialog(await this.deps.backend().captureTail(m.paneId!, SCREEN_LINES).catch(() => "")));
          continue;
        }
        m.exited = { status: pane?.exitStatus ?? null, at: Date.now() };
        if (pane) {
          // remain-on-exit kept it for its status and last screen; now it goes
          m.lastOutput = (await this.deps.backend().captureTail(m.paneId!, LAST_OUTPUT_LINES).catch(() => "")).trimEnd();
          await this.deps.backend().kill(m.paneId!);
        }
        this.end(m, exitDetail(pane));
        await endWorkerProcesses(m.sessionId, null); // what it left running would keep its (revoked) credential
        removeDir(m);
        log.info(`agents: ${m.sessionId} exited (${pane?.exitStatus ?? "pane gone"})`);
      }
    } catch (e) {
      log.warn(`agents: cannot list the panes: ${(e as Error).message}`);
    } finally {
      this.checking = false;
    }
  }
}

/**
 * The worker's folder goes (its credential, config and transcripts). Once when it ends, and again once its
 * processes are gone: a dying agent writes its config on the way out (Claude Code's .claude.json), after the first.
 */
function removeDir(member: Member): void {
  rmSync(member.dir, { recursive: true, force: true });
}

function exitDetail(pane: PaneInfo | undefined): string {
  if (pane?.exitStatus != null) return `the worker exited with status ${pane.exitStatus}`;
  if (pane?.exitSignal != null) return `the worker was killed by signal ${pane.exitSignal}`;
  return pane ? "the worker exited" : "the worker's pane is gone";
}

/** What an adapter reads of the agent's own record (its hooks' files, a transcript); null when that cannot be read. */
function recorded<T>(read: () => T | null): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}

export const sessionNotFound = (sessionId: string) => refuse(404, "session_not_found", `no worker has session ${sessionId}; GET /members lists them`, { sessionId });

// worktree is true, "true" (query strings), false, "false", or the ticket itself.
const wantsWorktree = ({ worktree: wt }: SpawnInput) => wt === true || (typeof wt === "string" && wt !== "false");

/** The ticket a spawn names (null for none), or the 400 for a worktree that cannot have one. */
function ticketOf(input: SpawnInput): string | null | Answer {
  const wt = input.worktree;
  const ticket = typeof wt === "string" && wt !== "true" && wt !== "false" ? wt : (input.ticket ?? null);
  if (wantsWorktree(input) && !ticket) return badRequest("ticket: required when worktree is true (the worktree is named after the ticket)");
  if (ticket !== null && !TICKET.test(ticket)) return badRequest(`ticket: expected letters, digits, '.', '_' or '-', got "${ticket}"`);
  return ticket;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function spawnView(m: Member): Record<string, unknown> {
  return {
    terminalId: m.sessionId,
    sessionId: m.sessionId,
    paneId: m.paneId,
    profile: m.profile,
    role: m.role,
    cwd: m.cwd,
    ownerTerminal: m.owner,
    state: stateOf(m),
    ...(m.worktree ? { worktree: m.worktree, branch: m.branch } : {}),
  };
}

function rosterView(m: Member, pane: PaneInfo | undefined): Record<string, unknown> {
  return {
    sessionId: m.sessionId,
    paneId: m.paneId,
    profile: m.profile,
    role: m.role,
    state: stateOf(m),
    cwd: m.cwd,
    ticket: m.ticket,
    worktree: m.worktree,
    branch: m.branch,
    owner: m.owner,
    startedAt: m.startedAt,
    liveStatus: !pane ? "gone" : pane.dead ? "exited" : "running",
    command: pane?.command ?? null,
    exitStatus: m.exited?.status ?? null,
    ...(m.exited ? { lastOutput: m.lastOutput } : {}),
  };
}

export const configDirOf = (path: string | null) => (path ? dirname(path) : process.cwd());
