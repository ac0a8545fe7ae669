import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { migrate } from "./db.ts";
import { DayTags, OTHER_TAG } from "./day-tags.ts";

const DAY_S = 86_400;
const T = 100 * DAY_S;

function store(): Database {
  const db = new Database(":memory:", { strict: true });
  migrate(db);
  return db;
}

test("past the cap a new tag is kept as other, once per request; a tag the day keeps stays by name; key: tags never count", () => {
  const tags = new DayTags(store());
  expect(tags.keep(T, ["a", "b", "a"], 3)).toEqual(["a", "b"]);
  expect(tags.keep(T + 1, ["c", "d", "e", "key:app"], 3)).toEqual(["c", OTHER_TAG, "key:app"]);
  expect(tags.keep(T + 2, ["b", "f", OTHER_TAG], 3)).toEqual(["b", OTHER_TAG]);
  // The next UTC day has a cap of its own.
  expect(tags.keep(T + DAY_S, ["x", "y", "z"], 3)).toEqual(["x", "y", "z"]);
  expect(tags.keep(T, ["g"], 0)).toEqual(["g"]); // 0: no cap
});

test("a day's kept tags are read from the store, its traces' and its roll-up's: a restart opens no second cap", () => {
  const db = store();
  db.run("INSERT INTO traces (request_id, timestamp, model, original_model, kind, original_format, stream, status) VALUES ('r', ?, 'm', 'm', 'chat', 'ollama', 0, 'completed')", [T + 5]);
  db.run("INSERT INTO trace_tags (request_id, tag, timestamp) VALUES ('r', 'kept-trace', ?), ('r', 'key:app', ?)", [T + 5, T + 5]);
  db.run("INSERT INTO tag_days VALUES ('1970-04-11', 'kept-day', 1, 0, 0, 0, 0, 0, 0, 0)");
  const tags = new DayTags(db);
  expect(tags.keep(T + 10, ["new", "kept-day", "kept-trace"], 2)).toEqual([OTHER_TAG, "kept-day", "kept-trace"]);
});
