// The MessageService: turns between the leads and the workers. A send delivers
// a turn to a worker's pane and waits for its reply (or question, or failure); a
// worker's reply resolves the waiting send, else its async ticket, else lands in
// the session's inbox, which a lead drains. A worker's question (ask) goes to the
// lead waiting on its turn, whose answer names the question's turnId.
import type { Config } from "../config/schema.ts";
import { type Answer, answer, refuse } from "./answers.ts";
import type { AskInput, ReplyInput, SendInput } from "./inputs.ts";
import { log } from "../log.ts";
import { PaneGone, type PaneBackend } from "./panes.ts";
import { type Approval, newId, newTurnId, type Result, Task, Turn } from "./rendezvous.ts";
import { type Member, type SessionManager, sessionNotFound } from "./sessions.ts";

/** A finished ticket can be polled this long. */
const TASK_TTL_MS = 60 * 60_000;
/** Lines of the pane a transcript reply is cut from. */
const TRANSCRIPT_LINES = 200;

export class MessageService {
  private tasks = new Map<string, Task>();
  /** Send outcomes since start, for /metrics. */
  readonly outcomes = new Map<string, number>();
  /** Replies refused because the worker's inbox was full, since start, for /metrics. */
  inboxRefusals = 0;

  constructor(
    private readonly sessions: SessionManager,
    private readonly backend: () => PaneBackend,
    private readonly config: () => Config,
  ) {}

  /** POST /sessions/{id}/message: a new turn, or (with turnId) the answer to a worker's question. */
  async send(sessionId: string, input: SendInput): Promise<Answer> {
    const member = this.sessions.get(sessionId);
    if (!member) return this.count(sessionNotFound(sessionId), "session_not_found");
    if (input.turnId !== undefined) return this.answer(member, input.turnId, input.content, input.timeoutMs);
    if (member.exited) return this.count(answer({ sessionId, status: "failed", detail: "the worker has exited; spawn another" }, 202), "failed");
    const busy = this.busy(member);
    if (busy) return this.count(answer({ sessionId, status: "busy", detail: busy }, 202), "busy");
    // A turn given up that the agent may still be on: stopped first, so the new one is not typed into it.
    if (member.unsettled) await this.stopWork(member, member.unsettled);
    if (member.exited) return this.count(answer({ sessionId, status: "failed", detail: "the worker has exited; spawn another" }, 202), "failed");
    const id = newTurnId();
    const task = input.wait ? null : new Task(sessionId, id);
    const turn = (member.turn = new Turn(id, input.content, task));
    const { turnTimeoutMs } = this.config().agents;
    turn.expireAfter(turnTimeoutMs, () =>
      this.abandon(member, turn, `no reply within ${turnTimeoutMs} ms (agents.turnTimeoutMs): the turn is given up and the worker is idle again; a later reply waits in GET /sessions/${sessionId}/replies`),
    );
    if (task) {
      this.keep(task);
      void this.deliver(member, turn);
      return this.count(answer({ sessionId, status: "accepted", ticket: task.ticket, turn: id }, 202), "accepted");
    }
    const next = turn.wait(input.timeoutMs); // waiting before delivering: a quick worker's reply is not missed
    void this.deliver(member, turn);
    return this.outcome(member, turn, await next, input.timeoutMs);
  }

  /** Why a send cannot start a turn now (the worker's open turn, or one it is being stopped on), or null. */
  private busy(member: Member): string | null {
    const replies = `GET /sessions/${member.sessionId}/replies`;
    if (member.turn) return `the worker is still on turn ${member.turn.id}, sent at ${new Date(member.turn.since).toISOString()}; wait for its reply (${replies})`;
    if (member.stopping) return "herd is stopping the worker's work on a turn that was given up; send again in a few seconds";
    return null;
  }

  /** POST /sessions/{id}/reply, by the worker that owns the session. */
  async reply(sessionId: string, input: ReplyInput): Promise<Answer> {
    const member = this.sessions.get(sessionId);
    if (!member) return sessionNotFound(sessionId);
    const open = member.turn;
    const result = (outcome: string, delivered: boolean) => answer({ sessionId, delivered, outcome });
    if (input.turnDone && (!open || !this.sessions.endsTurn(member, open))) {
      member.unsettled = null; // the agent finished an earlier turn: it is past the one herd gave up
      return result("no_open_turn", false);
    }
    // A reply answers the open turn when it names it, or names none and no other turn can be meant.
    const turn = open && (input.turn !== undefined ? input.turn === open.id : !member.unsettled) ? open : null;
    let content = input.content;
    if (turn) {
      const source = input.turnDone ? "transcript" : "reply";
      if (input.turnDone) content = await this.transcript(member, turn);
      if (member.turn !== turn) return result("no_open_turn", false); // an explicit reply ended it meanwhile
      member.unsettled = null;
      this.close(member, turn);
      const failure = input.turnDone ? this.sessions.turnFailure(member) : null;
      const taker = turn.settle(failure ? { kind: failure.exhausted ? "backend_exhausted" : "failed", detail: failure.detail } : { kind: "reply", reply: content, replySource: source });
      if (taker === "send") return result("resolved_send", true);
      if (taker === "ticket") return result("resolved_async_ticket", true);
    }
    const full = this.inboxFull(member, content);
    if (full) {
      this.inboxRefusals++;
      return refuse(429, "inbox_full", `${full}: a lead must drain it first (GET /sessions/${sessionId}/replies)`, { sessionId });
    }
    const named = input.turn !== undefined ? { turn: input.turn } : {};
    if (open) log.info(`agents: ${sessionId} replied for ${input.turn ?? "a turn it did not name"} while on ${open.id}: kept in the inbox, not taken as ${open.id}'s`);
    member.inbox.push({ msgId: newId("msg"), content, ...named });
    return result("queued", false);
  }

  /** What taking `content` into the worker's inbox would overrun (agents.inbox), or null when it fits. */
  private inboxFull(member: Member, content: string): string | null {
    const { maxReplies, maxBytes } = this.config().agents.inbox;
    if (member.inbox.length >= maxReplies) return `the inbox holds ${member.inbox.length} replies, its cap (agents.inbox.maxReplies)`;
    const bytes = member.inbox.reduce((sum, r) => sum + Buffer.byteLength(r.content), Buffer.byteLength(content));
    if (bytes > maxBytes) return `with this reply the inbox would hold ${bytes} bytes, over its cap of ${maxBytes} (agents.inbox.maxBytes)`;
    return null;
  }

  /** POST /sessions/{id}/cancel: a lead gives up the worker's open turn; whoever waits on it learns "failed", and the agent is interrupted. */
  async cancel(sessionId: string): Promise<Answer> {
    const member = this.sessions.get(sessionId);
    if (!member) return sessionNotFound(sessionId);
    const turn = member.turn;
    if (!turn) return refuse(409, "no_open_turn", "the worker has no open turn to cancel", { sessionId });
    await this.abandon(member, turn, "the turn was cancelled by a lead");
    return answer({ sessionId, cancelled: true });
  }

  /** POST /sessions/{id}/ask, by the worker that owns the session: blocks until a lead answers. */
  async ask(sessionId: string, input: AskInput): Promise<Answer> {
    const member = this.sessions.get(sessionId);
    if (!member) return sessionNotFound(sessionId);
    const turn = member.turn;
    if (!turn?.listened) {
      return refuse(409, "no_pending_send", "no lead is waiting on this session's turn, so nobody would see the question; reply instead", { sessionId });
    }
    if (input.turn !== undefined ? input.turn !== turn.id : member.unsettled) {
      const which = input.turn !== undefined ? `turn ${input.turn} is over` : "a turn herd gave up may still be running, so a question naming no turn could be its";
      return refuse(409, "no_pending_send", `${which}; the open turn is ${turn.id}`, { sessionId });
    }
    const { turnId, answer: pending } = turn.open(input.question, input.timeoutMs);
    turn.settle({ kind: "question", question: input.question, turnId });
    const text = await pending;
    if (text === null) return answer({ sessionId, status: "no_answer", detail: `no answer within ${input.timeoutMs} ms; carry on and reply` }, 202);
    return answer({ sessionId, answered: true, answer: text });
  }

  /** GET /sessions/{id}/replies: the held replies, removed as they are read (kept with `peek`, for fleet_ack). */
  drain(sessionId: string, peek = false): Answer {
    const member = this.sessions.get(sessionId);
    if (!member) return sessionNotFound(sessionId);
    return answer({ sessionId, replies: peek ? [...member.inbox] : member.inbox.splice(0) });
  }

  /** fleet_ack: drops one held reply (seen with a peek) without draining the others. */
  ack(sessionId: string, msgId: string): Answer {
    const member = this.sessions.get(sessionId);
    if (!member) return sessionNotFound(sessionId);
    const i = member.inbox.findIndex((r) => r.msgId === msgId);
    if (i >= 0) member.inbox.splice(i, 1);
    return answer({ sessionId, msgId, acked: i >= 0 });
  }

  /** GET /tasks/{ticket}. */
  task(ticket: string): Answer {
    const task = this.tasks.get(ticket);
    if (!task) return refuse(404, "unknown_ticket", `no task has ticket ${ticket} (finished tasks are kept ${TASK_TTL_MS / 60_000} minutes)`);
    return answer(task.view());
  }

  /** What the worker's screen shows while on its turn: whoever waits learns of a dialog the moment it comes. */
  seen(member: Member, dialog: Approval | null): void {
    const turn = member.turn;
    if (!turn?.delivered || !turn.showing(dialog)) return;
    if (dialog) turn.settle({ kind: "approval", ...dialog });
    else turn.task?.resume();
  }

  /** The worker stopped or exited: whoever waits on its turn learns it now. */
  fail(member: Member, detail: string): void {
    const turn = member.turn;
    if (!turn) return;
    this.close(member, turn);
    turn.settle({ kind: "failed", detail });
  }

  /** Gives `turn` up as failed, if it is still the worker's open one, and stops the agent's work on it: then the worker is idle again. */
  private async abandon(member: Member, turn: Turn, detail: string): Promise<void> {
    if (member.turn !== turn) return;
    this.fail(member, detail);
    await this.stopWork(member, turn.id);
  }

  /** Interrupts the agent on a turn herd gave up; one it cannot be seen to leave stays unsettled (replies naming no turn are kept out). */
  private async stopWork(member: Member, turnId: string): Promise<void> {
    if (!member.adapter.interrupt) return; // a kind herd cannot interrupt: its replies are judged as they come
    member.stopping = true;
    try {
      member.unsettled = (await this.sessions.interrupt(member)) ? null : turnId;
      if (member.unsettled) log.warn(`agents: ${member.sessionId} was not back at its prompt after the interrupt of turn ${turnId}: a reply naming no turn is kept out until it is`);
    } finally {
      member.stopping = false;
    }
  }

  private async answer(member: Member, turnId: string, content: string, timeoutMs: number): Promise<Answer> {
    const turn = member.turn;
    const ask = turn?.ask;
    if (!turn || ask?.turnId !== turnId) {
      const detail = `turn ${turnId} is not an open question of this worker (answered, timed out or replaced); GET /sessions/${member.sessionId}/status shows the open one`;
      return this.count(refuse(409, "stale_turn", detail, { sessionId: member.sessionId }), "stale_turn");
    }
    const next = turn.wait(timeoutMs);
    ask.settle(content);
    return this.outcome(member, turn, await next, timeoutMs);
  }

  private async deliver(member: Member, turn: Turn): Promise<void> {
    try {
      await this.backend().sendText(member.paneId!, this.sessions.typing(member, turn));
      turn.delivered = true;
      turn.task?.delivered();
    } catch (e) {
      if (member.turn !== turn) return;
      this.close(member, turn);
      turn.settle(e instanceof PaneGone ? { kind: "gone", detail: e.message } : { kind: "backend_error", detail: (e as Error).message });
    }
  }

  private outcome(member: Member, turn: Turn, result: Result | null, timeoutMs: number): Answer {
    const sessionId = member.sessionId;
    if (!result && turn.approval) result = { kind: "approval", ...turn.approval };
    if (!result) {
      const status = turn.delivered ? "working" : "queued";
      const detail = `no reply within ${timeoutMs} ms; the worker is ${turn.delivered ? "still working" : "not yet given the message"}. Its reply will wait in GET /sessions/${sessionId}/replies`;
      return this.count(answer({ sessionId, status, detail, turn: turn.id }, 202), status);
    }
    switch (result.kind) {
      case "reply":
        return this.count(answer({ sessionId, reply: result.reply, replySource: result.replySource }), result.replySource);
      case "question":
        return this.count(answer({ sessionId, status: "question", question: result.question, turnId: result.turnId }, 202), "question");
      case "approval": {
        const detail = `the worker waits for an answer at its terminal (its profile's permissions did not allow this); cancel the turn (POST /sessions/${sessionId}/cancel) or answer it in the worker's pane`;
        return this.count(answer({ sessionId, status: "awaiting_approval", question: result.question, dialog: result.dialog, detail, turn: turn.id }, 202), "awaiting_approval");
      }
      case "failed":
      case "backend_exhausted":
        return this.count(answer({ sessionId, status: result.kind, detail: result.detail }, 202), result.kind);
      case "gone":
        return this.count(refuse(404, "session_not_found", `the worker's pane is gone: ${result.detail}`, { sessionId }), "session_not_found");
      case "backend_error":
        return this.count(refuse(502, "backend_error", result.detail, { sessionId }), "backend_error");
    }
  }

  private close(member: Member, turn: Turn): void {
    if (member.turn === turn) member.turn = null;
    turn.end();
  }

  /** The worker's answer from its agent's own record, else the pane's tail after the turn's own text. */
  private async transcript(member: Member, turn: Turn): Promise<string> {
    const recorded = this.sessions.lastAnswer(member);
    if (recorded !== null) return recorded;
    const tail = await this.backend()
      .captureTail(member.paneId!, TRANSCRIPT_LINES)
      .catch(() => "");
    const lines = tail.split("\n");
    const first = turn.content.split("\n")[0]!.trim();
    const start = lines.findLastIndex((l) => l.includes(first));
    return lines
      .slice(start + 1)
      .join("\n")
      .trim();
  }

  private keep(task: Task): void {
    const now = Date.now();
    for (const [ticket, t] of this.tasks) if (t.endedAt && now - t.endedAt > TASK_TTL_MS) this.tasks.delete(ticket);
    this.tasks.set(task.ticket, task);
  }

  private count(a: Answer, outcome: string): Answer {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
    return a;
  }
}
