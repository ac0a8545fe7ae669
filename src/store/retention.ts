// Trace retention (store.traces): rows older than maxAgeDays, and the oldest rows while the store
// holds more than maxMb, are summed into the daily roll-ups (trace_days, tag_days) and deleted.
// The roll-ups are held to a share of maxMb themselves, their oldest days deleted past it (the tags'
// first: a client's tags must not cost the fleet's per-model history), so they never take the
// traces' room. The trace worker runs it after a write, on its own connection: never on a request's path.
import type { Database } from "bun:sqlite";
import { OTHER_MODEL } from "../core/client-names.ts";

export interface Retention {
  /** Traces older than this many days are pruned; 0 keeps them whatever their age. */
  maxAgeDays: number;
  /** The store's data (its pages in use) is kept under this many MB by pruning the oldest traces; 0: no cap. */
  maxMb: number;
  /** Distinct tags a UTC day keeps (day-tags.ts); 0: no cap. */
  maxTagsPerDay: number;
}

const DAY_S = 86_400;
const MB = 1024 * 1024;
/** Pruned for size: a tenth more than the excess, so the next writes do not prune again at once. */
const SIZE_MARGIN = 0.1;
/** A store whose indexes free slower than its rows: a few rounds, not a loop for ever. */
const SIZE_ROUNDS = 8;

const DAY = "date(timestamp, 'unixepoch')";

/** The daily roll-ups' share of maxMb; the traces have the rest. */
export const ROLLUP_SHARE = 0.25;
/**
 * A roll-up row's bytes in the store, from its key's (which its primary-key index holds a second time): SQLite's
 * dbstat gave 2.2 × the key's bytes + 60 within a tenth, for keys of 15 to 350 bytes (bun:sqlite's SQLite 3.54).
 */
const rowBytes = (...columns: string[]) => `(2.2 * (${columns.map((c) => `length(CAST(${c} AS BLOB))`).join(" + ")}) + 60)`;
export const TAG_DAY_BYTES = rowBytes("day", "tag");
const TRACE_DAY_BYTES = rowBytes("day", "node_id", "model");

/** A function that prunes `db` to a retention and says how many traces it pruned; prepared once per connection. */
export function tracePruner(db: Database): (keep: Retention, now: number) => number {
  // A request nothing served is summed under OTHER_MODEL: its name is whatever the client sent.
  const rollTraces = db.prepare<unknown, [number]>(`INSERT INTO trace_days
      (day, node_id, model, requests, completed, prompt_tokens, completion_tokens, latency_sum, latency_count, last_used)
    SELECT ${DAY}, COALESCE(node_id, ''), CASE WHEN node_id IS NULL THEN '${OTHER_MODEL}' ELSE model END, COUNT(*),
      SUM(status = 'completed'), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),
      COALESCE(SUM(latency_ms), 0), COUNT(latency_ms), MAX(timestamp)
    FROM traces WHERE timestamp < ? GROUP BY 1, 2, 3
    ON CONFLICT (day, node_id, model) DO UPDATE SET requests = requests + excluded.requests,
      completed = completed + excluded.completed, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
      completion_tokens = completion_tokens + excluded.completion_tokens, latency_sum = latency_sum + excluded.latency_sum,
      latency_count = latency_count + excluded.latency_count, last_used = MAX(last_used, excluded.last_used)`);
  const rollTags = db.prepare<unknown, [number]>(`INSERT INTO tag_days
      (day, tag, requests, failed, prompt_tokens, completion_tokens, latency_sum, latency_count, ttft_sum, ttft_count)
    SELECT date(tt.timestamp, 'unixepoch'), tt.tag, COUNT(*), SUM(t.status <> 'completed'), COALESCE(SUM(t.prompt_tokens), 0),
      COALESCE(SUM(t.completion_tokens), 0), COALESCE(SUM(t.latency_ms), 0), COUNT(t.latency_ms),
      COALESCE(SUM(t.time_to_first_token_ms), 0), COUNT(t.time_to_first_token_ms)
    FROM trace_tags tt JOIN traces t ON t.request_id = tt.request_id WHERE tt.timestamp < ? GROUP BY 1, 2
    ON CONFLICT (day, tag) DO UPDATE SET requests = requests + excluded.requests, failed = failed + excluded.failed,
      prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens,
      latency_sum = latency_sum + excluded.latency_sum, latency_count = latency_count + excluded.latency_count,
      ttft_sum = ttft_sum + excluded.ttft_sum, ttft_count = ttft_count + excluded.ttft_count`);
  const deleteTags = db.prepare<unknown, [number]>("DELETE FROM trace_tags WHERE timestamp < ?");
  const deleteTraces = db.prepare<unknown, [number]>("DELETE FROM traces WHERE timestamp < ?");
  const oldest = db.prepare<{ t: number | null }, []>("SELECT MIN(timestamp) AS t FROM traces");
  const count = db.prepare<{ n: number }, []>("SELECT COUNT(*) AS n FROM traces");
  // The first row kept when the oldest `offset` go.
  const keptFrom = db.prepare<{ t: number }, [number]>("SELECT timestamp AS t FROM traces ORDER BY timestamp LIMIT 1 OFFSET ?");

  const pruneBefore = db.transaction((cutoff: number): number => {
    rollTraces.run(cutoff);
    rollTags.run(cutoff);
    deleteTags.run(cutoff);
    return deleteTraces.run(cutoff).changes;
  });
  const holdRollups = rollupHolder(db);

  // A store just opened may hold roll-ups past their share (an older herd's): they are held to it before any trace goes.
  let rolled = true;
  return (keep, now) => {
    const hold = () => {
      if (keep.maxMb && rolled) holdRollups(keep.maxMb * MB * ROLLUP_SHARE);
      rolled = !keep.maxMb;
    };
    hold();
    let pruned = 0;
    const ageCutoff = now - keep.maxAgeDays * DAY_S;
    const first = oldest.get()!.t;
    if (keep.maxAgeDays && first !== null && first < ageCutoff) {
      pruned += pruneBefore(ageCutoff);
      rolled = true;
      hold();
    }
    for (let round = 0; keep.maxMb && round < SIZE_ROUNDS; round++) {
      const used = usedBytes(db);
      const rows = count.get()!.n;
      if (used <= keep.maxMb * MB || !rows) break;
      const drop = Math.ceil(rows * Math.min(1, 1 - (keep.maxMb * MB) / used + SIZE_MARGIN));
      const cutoff = drop >= rows ? Number.MAX_VALUE : keptFrom.get(drop)!.t;
      const deleted = pruneBefore(cutoff);
      if (!deleted) break;
      pruned += deleted;
      rolled = true;
      hold();
    }
    return pruned;
  };
}

/**
 * A function that deletes the roll-ups' oldest days until they fit `budget` bytes (rowBytes' estimate): tag_days'
 * first, then, only if trace_days alone is past it, trace_days'. Runs only after roll-ups grew: it reads them whole.
 */
function rollupHolder(db: Database): (budget: number) => void {
  const traceDaysBytes = db.prepare<{ bytes: number }, []>(`SELECT COALESCE(SUM(${TRACE_DAY_BYTES}), 0) AS bytes FROM trace_days`);
  // The newest day whose bytes, summed from the newest day back, pass the budget: it and every older day go.
  const lastOver = (table: string, bytes: string) =>
    db.prepare<{ day: string }, [number]>(`SELECT day FROM (SELECT day, SUM(SUM(${bytes})) OVER (ORDER BY day DESC) AS kept FROM ${table} GROUP BY day)
      WHERE kept > ? ORDER BY day DESC LIMIT 1`);
  const tagDayOver = lastOver("tag_days", TAG_DAY_BYTES);
  const traceDayOver = lastOver("trace_days", TRACE_DAY_BYTES);
  const deleteTagDays = db.prepare<unknown, [string]>("DELETE FROM tag_days WHERE day <= ?");
  const deleteTraceDays = db.prepare<unknown, [string]>("DELETE FROM trace_days WHERE day <= ?");
  return db.transaction((budget: number) => {
    const traceDays = traceDaysBytes.get()!.bytes;
    const tagsOver = tagDayOver.get(budget - traceDays);
    if (tagsOver) deleteTagDays.run(tagsOver.day);
    const daysOver = traceDays > budget ? traceDayOver.get(budget) : null;
    if (daysOver) deleteTraceDays.run(daysOver.day);
  });
}

/** The bytes of the store's pages in use: what its file needs, whatever it grew to before (freed pages are reused). */
export function usedBytes(db: Database): number {
  const pages = db.query<{ page_count: number }, []>("PRAGMA page_count").get()!.page_count;
  const free = db.query<{ freelist_count: number }, []>("PRAGMA freelist_count").get()!.freelist_count;
  const size = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  return (pages - free) * size;
}
