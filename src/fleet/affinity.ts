// Session affinity: which node:model served each session's last turn, and whether that node likely still holds the
// turn's prompt in its KV cache. Ollama keeps one sequence per parallel slot and a new prompt takes a free slot, so a
// session's cache survives until other prompts have taken the slots. Modelled simply: a node:model keeps the
// prompts of the last `slots` distinct sessions it served (a request without a session counts as one of its own),
// and forgets everything when the model is no longer loaded there. Both maps are bounded (an LRU with a cap, and
// an age past which a session is forgotten): session keys come from clients, and must not grow memory without bound.

/** Sessions remembered at most; the least recently served is forgotten first. */
export const MAX_SESSIONS = 10_000;
/** A session silent this long is forgotten: its node has long since unloaded the model or given the slot away. */
export const SESSION_MAX_AGE_MS = 30 * 60_000;
/** Recent prompts remembered per node:model: more parallel slots than any node runs. */
const MAX_SLOTS_TRACKED = 64;

interface LastTurn {
  nodeId: string;
  model: string;
  at: number;
}

export class SessionAffinity {
  /** Session key → where its last turn ran; in order of last use (a Map keeps insertion order). */
  private readonly sessions = new Map<string, LastTurn>();
  /** node id + model → the sessions whose prompts it served last, most recent first. */
  private readonly recent = new Map<string, string[]>();

  constructor(
    private readonly maxSessions = MAX_SESSIONS,
    private readonly maxAgeMs = SESSION_MAX_AGE_MS,
  ) {}

  /** The node:model now holds this request's prompt in one of its slots; `session` undefined: a request without one. */
  served(session: string | undefined, nodeId: string, model: string, now = Date.now()): void {
    const slotKey = slotKeyOf(nodeId, model);
    // Edited in place: it runs for every answer, and a new list each time cost more than the routing that reads it.
    let list = this.recent.get(slotKey);
    if (!list) this.recent.set(slotKey, (list = []));
    // A request without a session takes a slot from the sessions before it, and no session is ever it: one shared mark.
    const was = session === undefined ? -1 : list.indexOf(session);
    if (was !== -1) list.splice(was, 1);
    list.unshift(session ?? ANONYMOUS);
    if (list.length > MAX_SLOTS_TRACKED) list.length = MAX_SLOTS_TRACKED;
    if (session === undefined) return;
    this.sessions.delete(session);
    this.sessions.set(session, { nodeId, model, at: now });
    for (const oldest of this.sessions.keys()) {
      if (this.sessions.size <= this.maxSessions) break;
      this.sessions.delete(oldest);
    }
  }

  /**
   * The node that likely still holds the session's last prompt for `model`, or null: it served the last turn
   * recently, fewer than `slots(node)` other sessions have used that node:model since, and `loaded(node)` says
   * the model is still there (an unload drops the cache).
   */
  holder(session: string, model: string, slots: (nodeId: string) => number, loaded: (nodeId: string) => boolean, now = Date.now()): string | null {
    const last = this.sessions.get(session);
    if (!last) return null;
    if (now - last.at > this.maxAgeMs) {
      this.sessions.delete(session);
      return null;
    }
    if (last.model !== model || !loaded(last.nodeId)) return null;
    const position = this.recent.get(slotKeyOf(last.nodeId, model))?.indexOf(session) ?? -1;
    return position !== -1 && position < slots(last.nodeId) ? last.nodeId : null;
  }

  /** Sessions remembered now. */
  get size(): number {
    return this.sessions.size;
  }
}

const slotKeyOf = (nodeId: string, model: string) => `${nodeId}\0${model}`;
/** A slot's prompt of a request without a session: no session key is ever this. */
const ANONYMOUS = "\0anonymous";
