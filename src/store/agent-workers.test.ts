import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { WorkerRoster, type WorkerRow } from "./agent-workers.ts";
import { migrate } from "./db.ts";

const row = (sessionId: string, startedAt: number): WorkerRow => ({ sessionId, profile: "p", role: "dev", tmuxSocket: "herd-1", paneId: "pane-1", panePid: 10, routerPid: 20, startedAt });

test("the roster keeps a row per worker until it is removed, oldest first", () => {
  const db = new Database(":memory:");
  migrate(db);
  const roster = new WorkerRoster(db);
  roster.add(row("w-b", 2));
  roster.add(row("w-a", 1));
  expect(roster.all()).toEqual([row("w-a", 1), row("w-b", 2)]);
  roster.remove("w-a");
  expect(roster.all().map((r) => r.sessionId)).toEqual(["w-b"]);
});

test("a store that refuses the write does not fail the spawn or the stop", () => {
  const db = new Database(":memory:");
  migrate(db);
  db.run("DROP TABLE agent_workers");
  const roster = new WorkerRoster(db);
  expect(() => roster.add(row("w-a", 1))).not.toThrow();
  expect(() => roster.remove("w-a")).not.toThrow();
});
