// The rendezvous of one turn: a lead's message waits for what the worker does
// with it (a reply, a question, a failure). Whoever waits takes it: a blocked
// send, else the async ticket; with neither, a reply goes to the inbox.
import { randomBytes } from "node:crypto";

export type Result =
  | { kind: "reply"; reply: string; replySource: "reply" | "transcript" }
  | { kind: "question"; question: string; turnId: string }
  /** The worker's screen shows a dialog waiting for someone at its terminal (an approval its profile did not give). */
  | { kind: "approval"; question: string; dialog: string }
  | { kind: "failed"; detail: string }
  /** The agent's model credential, or its limits, ran out (seed 004's backend_exhausted). */
  | { kind: "backend_exhausted"; detail: string }
  /** The pane is gone: 404 session_not_found. */
  | { kind: "gone"; detail: string }
  /** The pane backend failed: 502. */
  | { kind: "backend_error"; detail: string };

export type Phase = "queued" | "working" | "asking" | "awaiting_approval" | "done" | "failed";

/** A dialog the worker's screen shows, as the lead sees it. */
export interface Approval {
  question: string;
  dialog: string;
}

export const newId = (prefix: string) => `${prefix}-${randomBytes(6).toString("hex")}`;
export const newTurnId = () => newId("t");

/** A fire-and-poll send (wait:false), polled at GET /tasks/{ticket}. */
export class Task {
  readonly ticket = newId("tk");
  phase: Phase = "queued";
  result: Result | null = null;
  turnId: string | null = null;
  approval: Approval | null = null;
  endedAt: number | null = null;

  constructor(
    readonly sessionId: string,
    /** The id of the turn it waits on. */
    readonly turn: string,
  ) {}

  take(result: Result): void {
    if (this.endedAt) return;
    if (result.kind === "question") {
      this.phase = "asking";
      this.turnId = result.turnId;
      return;
    }
    if (result.kind === "approval") {
      this.phase = "awaiting_approval";
      this.approval = { question: result.question, dialog: result.dialog };
      return;
    }
    this.result = result;
    this.approval = null;
    this.phase = result.kind === "reply" ? "done" : "failed";
    this.turnId = null;
    this.endedAt = Date.now();
  }

  /** The turn reached the pane (the worker may have answered already: only a queued task moves on). */
  delivered(): void {
    if (this.phase === "queued") this.phase = "working";
  }

  /** Back to work after a question was answered or went unanswered, or a dialog went away. */
  resume(): void {
    if (this.endedAt) return;
    this.phase = "working";
    this.turnId = null;
    this.approval = null;
  }

  view(): Record<string, unknown> {
    const r = this.result;
    return {
      ticket: this.ticket,
      sessionId: this.sessionId,
      turn: this.turn,
      phase: this.phase,
      ...(r?.kind === "reply" ? { reply: r.reply, replySource: r.replySource } : {}),
      ...(r && "detail" in r ? { detail: r.detail } : {}),
      ...(this.turnId ? { turnId: this.turnId } : {}),
      ...(this.approval ?? {}),
    };
  }
}

/** A worker's open question; `turnId` is what a lead's answer must name. */
export interface Ask {
  turnId: string;
  question: string;
  timeoutMs: number;
  since: number;
  /** Hands the worker the answer, or null when the question went stale. */
  settle(answer: string | null): void;
}

interface Waiter {
  timeoutMs: number;
  since: number;
  settle(result: Result | null): void;
}

export class Turn {
  readonly since = Date.now();
  delivered = false;
  ask: Ask | null = null;
  /** The dialog the worker's screen shows now, since when. */
  approval: (Approval & { since: number }) | null = null;
  private waiter: Waiter | null = null;
  private expiry: Timer | null = null;
  /** When the turn is given up if the worker has not replied (ms epoch). */
  private expiresAt: number | null = null;

  constructor(
    /** The turn's own id (newTurnId): typed with it (adapter.frame), named back in the worker's fleet_reply and fleet_ask. */
    readonly id: string,
    readonly content: string,
    readonly task: Task | null,
  ) {}

  /** Someone takes what the worker does next: a blocked send or a ticket. */
  get listened(): boolean {
    return this.waiter !== null || this.task !== null;
  }

  /** Waits up to timeoutMs for the next result; null when the time runs out first. */
  wait(timeoutMs: number): Promise<Result | null> {
    this.waiter?.settle(null); // one lead waits at a time; an earlier one gives up as if timed out
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(null), timeoutMs);
      const waiter: Waiter = { timeoutMs, since: Date.now(), settle: (r) => done(r) };
      const done = (result: Result | null) => {
        clearTimeout(timer);
        if (this.waiter === waiter) this.waiter = null;
        resolve(result);
      };
      this.waiter = waiter;
    });
  }

  /** Hands `result` to whoever listens; says who took it. */
  settle(result: Result): "send" | "ticket" | null {
    const waiter = this.waiter;
    this.task?.take(result);
    if (waiter) {
      waiter.settle(result);
      return "send";
    }
    return this.task ? "ticket" : null;
  }

  /** Calls `expire` after `ms` unless the turn ended first: a worker that never replies does not hold its turn for ever. */
  expireAfter(ms: number, expire: () => void): void {
    this.expiry = setTimeout(expire, ms);
    this.expiresAt = Date.now() + ms;
  }

  /** The turn is over (replied, failed, cancelled, given up): its clock stops and an open question goes stale. */
  end(): void {
    if (this.expiry) clearTimeout(this.expiry);
    this.ask?.settle(null);
  }

  /** What the worker's screen shows now; says whether that changed (a dialog came, went, or asks another question). */
  showing(dialog: Approval | null): boolean {
    const same = dialog?.question === this.approval?.question && dialog?.dialog === this.approval?.dialog;
    if (same) return false;
    this.approval = dialog && { ...dialog, since: Date.now() };
    return true;
  }

  /** Opens a question; it settles null after timeoutMs, or when a newer one replaces it. */
  open(question: string, timeoutMs: number): { turnId: string; answer: Promise<string | null> } {
    this.ask?.settle(null);
    const turnId = newId("turn");
    const answer = new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => ask.settle(null), timeoutMs);
      const ask: Ask = {
        turnId,
        question,
        timeoutMs,
        since: Date.now(),
        settle: (text) => {
          clearTimeout(timer);
          if (this.ask === ask) this.ask = null;
          this.task?.resume();
          resolve(text);
        },
      };
      this.ask = ask;
    });
    return { turnId, answer };
  }

  view(): Record<string, unknown> {
    return {
      id: this.id,
      phase: this.ask ? "asking" : this.approval ? "awaiting_approval" : this.delivered ? "working" : "queued",
      since: this.since,
      expiresAt: this.expiresAt,
      ticket: this.task?.ticket ?? null,
      waiting: this.waiter ? { timeoutMs: this.waiter.timeoutMs, since: this.waiter.since } : null,
      ask: this.ask ? { turnId: this.ask.turnId, question: this.ask.question, timeoutMs: this.ask.timeoutMs, since: this.ask.since } : null,
      approval: this.approval,
    };
  }
}
