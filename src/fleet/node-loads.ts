// The loads herd has sent each node and not yet seen end. Ollama runs a node's loads one at a time, in the order they
// came (server/sched.go v0.32.15 processPending: one pending queue, each request in it waiting until its model is
// loaded, a busy model it evicts waited for first), while a request for a model already loaded is served at once
// (GetRunner): so a load sent behind others waits for them, and the finish-time estimate counts that wait. And a
// model such a load evicts is leaving that node: a request of it sent there now would be served at once beside the
// runs it has, and the load (with every request queued behind it there) would wait for that one too: such a request
// waits at herd for the load instead (evicted).
import { modelKey } from "./model-name.ts";

interface Load {
  /** The model (key) it loads. */
  model: string;
  /** When it is expected done (ms epoch). */
  until: number;
  /** The models (keys) it evicts there. */
  evicts: ReadonlySet<string>;
  /** Settles when it is seen done or failed. */
  done: Promise<void>;
}

export class NodeLoads {
  private readonly byNode = new Map<string, Set<Load>>();

  /**
   * A load of `model` sent to the node now, expected to wait `waitMs` (for a busy model it evicts) and then take
   * `loadMs`, behind the loads sent before it, evicting `evicts` there. Returns its end: call it once the load is seen
   * done (the node's first byte) or failed.
   */
  begin(nodeId: string, { model, waitMs = 0, loadMs, evicts = [] }: { model: string; waitMs?: number; loadMs: number; evicts?: readonly string[] }, now = Date.now()): () => void {
    let ended!: () => void;
    const done = new Promise<void>((resolve) => (ended = resolve));
    const load = { model: modelKey(model), until: now + Math.max(waitMs, this.aheadMs(nodeId, now)) + loadMs, evicts: new Set(evicts.map(modelKey)), done };
    let loads = this.byNode.get(nodeId);
    if (!loads) this.byNode.set(nodeId, (loads = new Set()));
    loads.add(load);
    return () => {
      loads.delete(load);
      if (!loads.size && this.byNode.get(nodeId) === loads) this.byNode.delete(nodeId);
      ended();
    };
  }

  /**
   * A request of `model` about to go to the node waits here for the loads sent there by now that evict the model, until
   * they are done or late, or `withinMs` has passed: sent now, Ollama would serve it at once from the runner still
   * loaded, and the load (with every load queued behind it there) would wait for it, as long as such requests come.
   * Null when none does; else the ms it waited. Rejects with the signal's reason if it is aborted meanwhile.
   */
  evicted(nodeId: string, model: string, withinMs: number, signal: AbortSignal, now = Date.now()): Promise<number> | null {
    const key = modelKey(model);
    const ahead = [...(this.byNode.get(nodeId) ?? [])].filter((load) => evictsNow(load, key, now));
    if (!ahead.length) return null;
    const waitMs = Math.min(withinMs, Math.max(...ahead.map((load) => load.until)) - now);
    const since = performance.now();
    return new Promise((resolve, reject) => {
      const settle = (error?: unknown) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        if (error === undefined) resolve(performance.now() - since);
        else reject(error);
      };
      const onAbort = () => settle(signal.reason);
      const timer = setTimeout(settle, Math.max(0, waitMs));
      signal.addEventListener("abort", onAbort, { once: true });
      if (signal.aborted) onAbort();
      void Promise.all(ahead.map((load) => load.done)).then(() => settle());
    });
  }

  /** A load sent to the node, not yet done nor late, evicts the model there. */
  evicting(nodeId: string, model: string, now = Date.now()): boolean {
    // Asked per model of each candidate while ranking: no list built, the first such load answers.
    const key = modelKey(model);
    for (const load of this.byNode.get(nodeId) ?? []) if (evictsNow(load, key, now)) return true;
    return false;
  }

  /**
   * How long until the load of `model` sent to the node is expected done, its wait for room and for the loads ahead of it
   * included: what every request of it there waits; null when herd sent none there, or it is done or late.
   */
  loadLeftMs(nodeId: string, model: string, now = Date.now()): number | null {
    const key = modelKey(model);
    let left: number | null = null;
    for (const load of this.byNode.get(nodeId) ?? []) if (load.model === key && load.until > now) left = Math.max(left ?? 0, load.until - now);
    return left;
  }

  /** How long until the loads sent to the node are expected done: 0 when none is, or all are late (those are forgotten). */
  aheadMs(nodeId: string, now = Date.now()): number {
    const loads = this.byNode.get(nodeId);
    let ahead = 0;
    for (const load of loads ?? []) {
      if (load.until <= now) loads!.delete(load);
      else ahead = Math.max(ahead, load.until - now);
    }
    if (loads && !loads.size) this.byNode.delete(nodeId);
    return ahead;
  }
}

/** The load, not yet done nor late, evicts the model (key) there. */
const evictsNow = (load: Load, key: string, now: number) => load.until > now && load.evicts.has(key);
