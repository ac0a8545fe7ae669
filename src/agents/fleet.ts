// The agent fleet: one SessionManager and one MessageService, behind both faces
// (REST in surfaces/agents.ts, MCP in surfaces/mcp.ts). Every operation checks
// the caller against the Authz table here, so the faces stay thin adapters.
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { LiveConfig } from "../config/live.ts";
import { log } from "../log.ts";
import type { WorkerRoster } from "../store/agent-workers.ts";
import { Answer, answer, refuse } from "./answers.ts";
import { type Action, forbidden, type Principal } from "./authz.ts";
import { Credentials } from "./credentials.ts";
import { credentialPolicy } from "./environment.ts";
import type { AskInput, ReplyInput, SendInput, SpawnInput } from "./inputs.ts";
import { MessageService } from "./messages.ts";
import type { PaneBackend } from "./panes.ts";
import { endWorkerProcesses, isRunning } from "./processes.ts";
import { configDirOf, SessionManager, workerDir } from "./sessions.ts";
import { TmuxBackend } from "./tmux.ts";

/** The version of herd's fleet contract (routes, tools, bodies), shown in /healthz. */
export const AGENTS_PROTOCOL = 1;

export class AgentFleet {
  readonly credentials: Credentials;
  readonly sessions: SessionManager;
  readonly messages: MessageService;
  private backend: PaneBackend | null = null;
  /** Whether this router ever had panes to clean up. */
  private used = false;

  constructor(
    private readonly live: LiveConfig,
    herdUrl: () => string,
    private readonly roster: WorkerRoster,
  ) {
    const agents = () => live.config.agents;
    this.credentials = new Credentials(() => ({ primary: agents().credentials.primary?.value ?? null, architect: agents().credentials.architect?.value ?? null }));
    this.sessions = new SessionManager({
      backend: () => this.panes(),
      credentials: this.credentials,
      config: () => live.config,
      configDir: () => configDirOf(live.current.source.path),
      herdUrl,
      roster,
      onGone: (member, detail) => this.messages.fail(member, detail),
      onScreen: (member, dialog) => this.messages.seen(member, dialog),
    });
    this.messages = new MessageService(this.sessions, () => this.panes(), () => live.config);
  }

  /** Workers can be spawned: the config has profiles. */
  get configured(): boolean {
    return Object.keys(this.live.config.agents.profiles).length > 0;
  }

  /** The fleet's panes live on a tmux socket named after the router's port: one fleet per router. */
  async start(port: number): Promise<void> {
    const privateDir = join(this.live.config.server.dataDir, "agents");
    await this.stopLeftovers(privateDir);
    this.backend = new TmuxBackend(`herd-${port}`, privateDir);
    // Panes left by an earlier router on this port have no valid credentials any more.
    if (this.configured) await this.backend.shutdown().catch(() => {});
  }

  /**
   * The workers a router that died without a shutdown (SIGKILL, a crash) left running, on whatever
   * port it had: stopped, with everything they started. Not re-adopted: their environment (HERD_URL,
   * the base URLs, an agent's MCP config) names the dead router's port, which no one can change in a
   * running process, their credentials died with it, and so did the lead waiting on their turn.
   */
  private async stopLeftovers(privateDir: string): Promise<void> {
    for (const row of this.roster.all()) {
      if (row.routerPid !== process.pid && isRunning(row.routerPid)) continue; // a live router's worker
      await endWorkerProcesses(row.sessionId, null);
      await new TmuxBackend(row.tmuxSocket, privateDir).killWorkspace(row.sessionId).catch(() => {});
      rmSync(workerDir(this.live.config.server.dataDir, row.sessionId), { recursive: true, force: true }); // its credential files
      this.roster.remove(row.sessionId);
      log.info(`agents: stopped ${row.sessionId} (${row.profile}), left running by a router that did not shut down`);
    }
  }

  /** The router is stopping: every worker ends, and the fleet's tmux server with them. */
  async close(): Promise<void> {
    await this.sessions.shutdown();
    if (this.backend && (this.used || this.configured)) await this.backend.shutdown().catch(() => {});
  }

  authenticate(token: string | null): Principal | null {
    return this.credentials.resolve(token);
  }

  /** The `panes` field of /healthz, and whether the backend answers; null when no profile is configured. */
  async health(): Promise<{ ok: boolean; fields: Record<string, unknown> } | null> {
    if (!this.configured || !this.backend) return null;
    try {
      const version = await this.backend.version();
      return { ok: true, fields: { panes: { backend: this.backend.kind, version, protocol: AGENTS_PROTOCOL, socket: this.backend.location } } };
    } catch (e) {
      return { ok: false, fields: { panes: "unreachable", detail: (e as Error).message } };
    }
  }

  // ---- the operations, one per route / tool ----

  members(caller: Principal): Promise<Answer> {
    return this.guard(caller, "READ", async () => answer({ workers: await this.sessions.roster() }));
  }

  /** fleet_list: the roster, plus the leads and each profile's capacity. */
  list(caller: Principal): Promise<Answer> {
    const leads = (["primary", "architect"] as const).filter((k) => this.live.config.agents.credentials[k]);
    return this.guard(caller, "READ", async () => answer({ workers: await this.sessions.roster(), leads, capacity: this.sessions.capacity() }));
  }

  profiles(caller: Principal): Promise<Answer> {
    return this.guard(caller, "READ", async () => {
      const { profiles, defaultProfile } = this.live.config.agents;
      const capacity = this.sessions.capacity();
      const list = Object.entries(profiles).map(([name, p]) => ({ name, command: p.command, args: p.args, cwd: p.cwd ?? null, env: p.env, capacity: p.capacity, running: capacity[name]!.running }));
      return answer({ profiles: list, defaultProfile: defaultProfile ?? list[0]?.name ?? null });
    });
  }

  memberCredentials(caller: Principal): Promise<Answer> {
    return this.guard(caller, "READ", async () => answer({ ...credentialPolicy(this.live.config) }));
  }

  /** GET /sessions: the backend's own workspace list. */
  workspaces(caller: Principal): Promise<Answer> {
    return this.guard(caller, "READ", () => this.raw("sessions", () => this.panes().workspaces()));
  }

  /** GET /agents: every pane the backend tracks. */
  agents(caller: Principal): Promise<Answer> {
    return this.guard(caller, "READ", () => this.raw("agents", () => this.panes().panes()));
  }

  /** A raw backend list (none while no server runs); a backend that cannot answer (tmux missing) is a 502 saying why. */
  private async raw(key: string, list: () => Promise<unknown[]>): Promise<Answer> {
    try {
      return answer({ backend: this.panes().kind, [key]: await list() });
    } catch (e) {
      return refuse(502, "backend_error", (e as Error).message);
    }
  }

  spawn(caller: Principal, input: SpawnInput): Promise<Answer> {
    return this.guard(caller, "SPAWN", () => {
      this.used = true;
      return this.sessions.spawn(caller, input);
    });
  }

  /** 204 whether or not a worker had the pane, as the seed's stopMember: a stop is idempotent, so a retried one is no error. */
  stop(caller: Principal, paneId: string): Promise<Answer> {
    return this.guard(caller, "STOP", async () => {
      await this.sessions.stop(paneId);
      return new Answer(204, null);
    });
  }

  send(caller: Principal, sessionId: string, input: SendInput): Promise<Answer> {
    return this.guard(caller, "SEND", () => this.messages.send(sessionId, input));
  }

  reply(caller: Principal, sessionId: string, input: ReplyInput): Promise<Answer> {
    return this.guard(caller, "REPLY", () => this.messages.reply(sessionId, input), sessionId);
  }

  ask(caller: Principal, sessionId: string, input: AskInput): Promise<Answer> {
    return this.guard(caller, "ASK", () => this.messages.ask(sessionId, input), sessionId);
  }

  cancel(caller: Principal, sessionId: string): Promise<Answer> {
    return this.guard(caller, "SEND", async () => this.messages.cancel(sessionId));
  }

  drain(caller: Principal, sessionId: string, peek = false): Promise<Answer> {
    return this.guard(caller, "DRAIN", async () => this.messages.drain(sessionId, peek));
  }

  ack(caller: Principal, sessionId: string, msgId: string): Promise<Answer> {
    return this.guard(caller, "DRAIN", async () => this.messages.ack(sessionId, msgId));
  }

  status(caller: Principal, sessionId: string): Promise<Answer> {
    return this.guard(caller, "READ", async () => {
      const status = await this.sessions.status(sessionId);
      const turn = status.body?.turn as Record<string, unknown> | null | undefined;
      return turn ? new Answer(status.status, { ...status.body, turn: replyFor(caller, sessionId, turn) }) : status;
    });
  }

  task(caller: Principal, ticket: string): Promise<Answer> {
    return this.guard(caller, "READ", async () => {
      const task = this.messages.task(ticket);
      return task.body?.ticket ? new Answer(task.status, replyFor(caller, task.body.sessionId, task.body)) : task;
    });
  }

  whoami(caller: Principal): Answer {
    if (caller.kind !== "member") return answer({ principal: caller.kind });
    const member = this.sessions.get(caller.sessionId);
    return answer({ principal: "member", sessionId: caller.sessionId, role: caller.role, paneId: member?.paneId ?? null, profile: member?.profile ?? null });
  }

  /** Whether the caller may scrape /metrics; the 403 otherwise. */
  metricsRefusal(caller: Principal): Answer | null {
    return forbidden(caller, "METRICS");
  }

  private async guard(caller: Principal, action: Action, run: () => Promise<Answer>, session?: string): Promise<Answer> {
    return forbidden(caller, action, session) ?? run();
  }

  private panes(): PaneBackend {
    if (!this.backend) throw new Error("the agent fleet has not started");
    return this.backend;
  }
}

/**
 * A turn's or task's view as `caller` may read it: a reply (and why a turn failed) is for the leads, who drain them,
 * and for the worker whose turn it was; another worker sees only where the turn stands.
 */
function replyFor(caller: Principal, sessionId: unknown, view: Record<string, unknown>): Record<string, unknown> {
  if (caller.kind !== "member" || caller.sessionId === sessionId) return view;
  const { reply: _, replySource: __, detail: ___, ...rest } = view;
  return rest;
}
