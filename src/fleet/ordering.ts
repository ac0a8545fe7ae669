// The order in which eligible nodes are tried. "finish-time" and "score" keep
// the ranking they come in (router/finish-order.ts, the scorer's); the two classic balancers exist so herd can be measured against them
// (npm run bench) and for fleets of identical machines.
import type { Config } from "../config/schema.ts";

export class NodeOrdering {
  private turns = new Map<string, number>();

  order<C extends { nodeId: string }>(strategy: Config["routing"]["strategy"], model: string, ranked: C[], inFlight: (nodeId: string) => number): C[] {
    if (strategy === "finish-time" || strategy === "score" || ranked.length < 2) return ranked;
    const byId = [...ranked].sort((a, b) => a.nodeId.localeCompare(b.nodeId));
    if (strategy === "least-connections") {
      const load = new Map(byId.map((s) => [s.nodeId, inFlight(s.nodeId)]));
      return byId.sort((a, b) => load.get(a.nodeId)! - load.get(b.nodeId)!);
    }
    const turn = this.turns.get(model) ?? 0;
    this.turns.set(model, turn + 1);
    return [...byId.slice(turn % byId.length), ...byId.slice(0, turn % byId.length)];
  }
}
