// The distinct tags a UTC day keeps (store.traces.maxTagsPerDay). Every tag is a row per request in the store
// and a row per day in its roll-up (tag_days), so a client sending new tags would grow both without end. Past the
// cap, a tag the day does not keep yet is kept as OTHER_TAG, once per request; a tag the day already keeps stays
// by name. herd's own key: tags (one per client key of the config) and OTHER_TAG itself never count against it.
// The trace thread asks it for each trace it writes; a day's kept tags are read from the store the first time
// that day is seen, so a restart does not open a second cap's worth.
import type { Database } from "bun:sqlite";
import { log } from "../log.ts";

/** What a tag past a day's cap is kept as. */
export const OTHER_TAG = "other";

const DAY_S = 86_400;
/** A batch can straddle midnight: the day before is kept too, no more. */
const DAYS_HELD = 2;

/** Whether `tag` is exempt from the cap: herd's own key: tags, and the bucket. */
const exempt = (tag: string) => tag.startsWith("key:") || tag === OTHER_TAG;

export class DayTags {
  private readonly days = new Map<string, { kept: Set<string>; said: boolean }>();
  private readonly known;

  constructor(db: Database) {
    // The tags the day's traces and roll-up already hold, up to the cap (a store an older herd grew may hold more).
    this.known = db.prepare<{ tag: string }, [number, number, string, number]>(`
      SELECT tag FROM trace_tags INDEXED BY trace_tags_time WHERE timestamp >= ?1 AND timestamp < ?2 AND substr(tag, 1, 4) <> 'key:' AND tag <> '${OTHER_TAG}'
      UNION SELECT tag FROM tag_days WHERE day = ?3 AND substr(tag, 1, 4) <> 'key:' AND tag <> '${OTHER_TAG}'
      LIMIT ?4`);
  }

  /** The tags a trace of `timestamp` (unix seconds) is kept with: `tags` deduplicated, those past the day's `cap` as OTHER_TAG (0: no cap). */
  keep(timestamp: number, tags: readonly string[], cap: number): string[] {
    if (!cap) return [...new Set(tags)];
    const day = this.day(timestamp, cap);
    const kept = new Set<string>();
    for (const tag of tags) {
      if (exempt(tag) || day.kept.has(tag)) kept.add(tag);
      else if (day.kept.size < cap) {
        day.kept.add(tag);
        kept.add(tag);
      } else {
        kept.add(OTHER_TAG);
        if (!day.said) log.warn(`${dayOf(timestamp)} (UTC) has ${cap} distinct tags (store.traces.maxTagsPerDay): a new tag that day is kept as "${OTHER_TAG}"`);
        day.said = true;
      }
    }
    return [...kept];
  }

  private day(timestamp: number, cap: number) {
    const name = dayOf(timestamp);
    let day = this.days.get(name);
    if (!day) {
      const start = Math.floor(timestamp / DAY_S) * DAY_S;
      day = { kept: new Set(this.known.all(start, start + DAY_S, name, cap).map((r) => r.tag)), said: false };
      this.days.set(name, day);
      if (this.days.size > DAYS_HELD) this.days.delete(this.days.keys().next().value!);
    }
    return day;
  }
}

function dayOf(timestamp: number): string {
  return new Date(timestamp * 1000).toISOString().slice(0, 10);
}
