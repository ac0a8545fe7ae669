// How much each model is used, read from the traces and the days pruned from them (analytics.ts:
// USAGE_SINCE): what the recommender and the model management page know about demand.
import type { Database } from "bun:sqlite";
import { USAGE_SINCE } from "./analytics.ts";

/** Requests per model since `since` (unix seconds), every outcome counted: demand is demand. */
export function requestsByModel(db: Database, since: number) {
  return db
    .query<{ model: string; requests: number }, [number]>(`SELECT model, SUM(requests) AS requests ${USAGE_SINCE} GROUP BY model ORDER BY requests DESC, model`)
    .all(since);
}

/** All-time requests and the last request (unix seconds) per node and model. */
export function usageByNodeModel(db: Database) {
  return db
    .query<{ node_id: string; model: string; requests: number; last_used: number }, [number]>(
      `SELECT node_id, model, SUM(requests) AS requests, MAX(last_used) AS last_used ${USAGE_SINCE} WHERE node_id IS NOT NULL GROUP BY node_id, model`,
    )
    .all(0);
}
