// The loads herd has sent each node and not yet seen end. Ollama runs a node's loads one at a time, in the order they
// came (server/sched.go v0.32.15 processPending: one pending queue, each request in it waiting until its model is
// loaded, a busy model it evicts waited for first), while a request for a model already loaded is served at once
// (GetRunner): so a load sent behind others waits for them, and the finish-time estimate counts that wait. And a
// model such a load evicts is leaving that node: a request of it sent there now would be served at once beside the
// runs it has, and the load (with every request queued behind it there) would wait for that one too.
import { modelKey } from "./model-name.ts";

interface Load {
  /** When it is expected done (ms epoch). */
  until: number;
  /** The models (keys) it evicts there. */
  evicts: ReadonlySet<string>;
}

export class NodeLoads {
  private readonly byNode = new Map<string, Set<Load>>();

  /**
   * A load sent to the node now, expected to wait `waitMs` (for a busy model it evicts) and then take `loadMs`, behind
   * the loads sent before it, evicting `evicts` there. Returns its end: call it once the load is seen done (the node's
   * first byte) or failed.
   */
  begin(nodeId: string, { waitMs = 0, loadMs, evicts = [] }: { waitMs?: number; loadMs: number; evicts?: readonly string[] }, now = Date.now()): () => void {
    const load = { until: now + Math.max(waitMs, this.aheadMs(nodeId, now)) + loadMs, evicts: new Set(evicts.map(modelKey)) };
    let loads = this.byNode.get(nodeId);
    if (!loads) this.byNode.set(nodeId, (loads = new Set()));
    loads.add(load);
    return () => {
      loads.delete(load);
      if (!loads.size && this.byNode.get(nodeId) === loads) this.byNode.delete(nodeId);
    };
  }

  /** A load sent to the node, not yet done nor late, evicts the model there. */
  evicting(nodeId: string, model: string, now = Date.now()): boolean {
    const key = modelKey(model);
    for (const load of this.byNode.get(nodeId) ?? []) if (load.until > now && load.evicts.has(key)) return true;
    return false;
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
