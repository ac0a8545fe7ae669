// How much each model is used, read from the traces: what the recommender and
// the model management page know about demand.
import type { Database } from "bun:sqlite";

/** Requests per model since `since` (unix seconds), every outcome counted: demand is demand. */
export function requestsByModel(db: Database, since: number) {
  return db
    .query<{ model: string; requests: number }, [number]>(
      "SELECT model, COUNT(*) AS requests FROM traces INDEXED BY traces_time WHERE timestamp >= ? GROUP BY model ORDER BY requests DESC, model",
    )
    .all(since);
}

/** All-time requests and the last request (unix seconds) per node and model. */
export function usageByNodeModel(db: Database) {
  return db
    .query<{ node_id: string; model: string; requests: number; last_used: number }, []>(
      "SELECT node_id, model, COUNT(*) AS requests, MAX(timestamp) AS last_used FROM traces WHERE node_id IS NOT NULL GROUP BY node_id, model",
    )
    .all();
}
