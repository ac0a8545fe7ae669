// Fleet management: the state of every node, and the heartbeats agents send.
import { Elysia } from "elysia";
import * as v from "valibot";
import { enrollment } from "../config/credentials/keys.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { bearerToken } from "../config/credentials/tokens.ts";
import { formatIssues } from "../config/problems.ts";
import { heartbeatSchema } from "../fleet/heartbeat.ts";
import { fromOllamaHerd } from "../fleet/ollama-herd.ts";
import { type FleetState, fleetLimits, fleetQueue, fleetStatus } from "../fleet/status.ts";
import { log } from "../log.ts";
import type { RepairStats } from "../fleet/repair-stats.ts";
import { readJsonObject } from "./body.ts";
import { jsonError } from "../core/wire-errors.ts";

/** The fleet's state: for any client. */
const READ: RouteFacts = { access: "client", body: "json", errors: "herd" };

export function fleetSurface(rt: FleetState & { toolRepairs: RepairStats }) {
  const refusals = new QuietLog(60_000);
  return new Elysia({ name: "fleet" })
    .use(routeFacts)
    .get("/fleet/status", () => fleetStatus(rt.registry, rt.queues, rt.pins, rt.speeds, rt.live.status()), { facts: READ })
    .get("/fleet/queue", () => fleetQueue(rt.registry, rt.queues, rt.toolRepairs), { facts: READ })
    .get("/fleet/limits", () => fleetLimits(rt.registry, rt.queues, rt.live.config), { facts: READ })
    // node: the heartbeat checks its node credential itself, as it needs the node id from the body.
    .post("/heartbeat", async ({ request, server }) => {
      const body = await readJsonObject(request);
      if (typeof body === "string") return jsonError(400, `invalid heartbeat: ${body}`);
      const parsed = v.safeParse(heartbeatSchema, fromOllamaHerd(body));
      if (!parsed.success) return jsonError(400, `invalid heartbeat: ${firstIssues(formatIssues(parsed.issues, heartbeatSchema))}`);
      const from = server?.requestIP(request)?.address ?? null;
      // Only an enrolled node is ever recorded, so no unknown host is sent a prompt.
      const admitted = enrollment(rt.live.config, parsed.output.node_id, bearerToken(request));
      if (!admitted.ok) {
        refusals.note(`heartbeat from ${from ?? "?"} refused (${admitted.status}): ${admitted.reason}`);
        return jsonError(admitted.status, admitted.reason);
      }
      const node = rt.registry.heartbeat(parsed.output, from, admitted.proven);
      return { status: "ok", node_status: node.status };
    }, { parse: "none", facts: { access: "node", body: "heartbeat", errors: "herd" } });
}

/** A heartbeat may break a thousand fields at once: its refusal names the first few. */
function firstIssues(issues: string[], shown = 5): string {
  return issues.slice(0, shown).join("; ") + (issues.length > shown ? `; and ${issues.length - shown} more` : "");
}

/** A refused agent retries every interval: each line is logged at most once per `everyMs` (and the memory of them is bounded). */
class QuietLog {
  private said = new Map<string, number>();

  constructor(private readonly everyMs: number) {}

  note(line: string): void {
    const now = Date.now();
    if (now - (this.said.get(line) ?? -Infinity) < this.everyMs) return;
    if (this.said.size >= 1000) this.said.clear();
    this.said.set(line, now);
    log.warn(line);
  }
}
