import { Database } from "bun:sqlite";
import { expect, spyOn, test } from "bun:test";
import { log } from "../log.ts";
import { migrate } from "./db.ts";
import { readSpeeds, type SpeedRow, writeSpeeds } from "./speeds.ts";

const row = (over: Partial<SpeedRow> = {}): SpeedRow => ({
  nodeId: "studio",
  model: "qwen3:8b",
  sizeBytes: 5.2e9,
  decodeTps: 48.5,
  decodeSamples: 3,
  prefillTps: null,
  prefillSamples: 0,
  loadMs: 2100,
  loadSamples: 1,
  updatedAt: 1_700_000_000_000,
  ...over,
});

function store(): Database {
  const db = new Database(":memory:");
  migrate(db);
  return db;
}

test("rows written are read back as they were; a node:model written again replaces its row", () => {
  const db = store();
  writeSpeeds(db, [row(), row({ model: "llama3.2:3b", decodeTps: null, decodeSamples: 0 })]);
  writeSpeeds(db, [row({ decodeTps: 50, decodeSamples: 4 })]);
  expect(readSpeeds(db).sort((a, b) => a.model.localeCompare(b.model))).toEqual([row({ model: "llama3.2:3b", decodeTps: null, decodeSamples: 0 }), row({ decodeTps: 50, decodeSamples: 4 })]);
});

test("a store that refuses the write is logged, not thrown", () => {
  const db = store();
  db.close();
  const warn = spyOn(log, "warn").mockImplementation(() => {});
  expect(() => writeSpeeds(db, [row()])).not.toThrow();
  expect(warn.mock.calls[0]?.[0]).toContain("learned speeds not saved");
  warn.mockRestore();
});
