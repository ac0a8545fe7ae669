import { Database } from "bun:sqlite";
import { expect, spyOn, test } from "bun:test";
import { log } from "../log.ts";
import { migrate } from "./db.ts";
import { readSlots, writeSlots } from "./slots.ts";

function store(): Database {
  const db = new Database(":memory:");
  migrate(db);
  return db;
}

test("rows written are read back; a node written again replaces its row, and a null slots removes it", () => {
  const db = store();
  writeSlots(db, [{ nodeId: "mini", slots: 1 }, { nodeId: "air", slots: 2 }]);
  writeSlots(db, [{ nodeId: "mini", slots: 2 }, { nodeId: "air", slots: null }]);
  expect(readSlots(db)).toEqual([{ nodeId: "mini", slots: 2 }]);
});

test("a store that refuses the write is logged, not thrown", () => {
  const db = store();
  db.close();
  const warn = spyOn(log, "warn").mockImplementation(() => {});
  expect(() => writeSlots(db, [{ nodeId: "mini", slots: 1 }])).not.toThrow();
  expect(warn.mock.calls[0]?.[0]).toContain("learned slots not saved");
  warn.mockRestore();
});
