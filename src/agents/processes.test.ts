import { expect, test } from "bun:test";
import { endWorkerProcesses, markedProcesses } from "./processes.ts";

test("a process started with the worker's HERD_SESSION_ID is found and ended, one with another id is left", async () => {
  const start = (id: string) => Bun.spawn(["sleep", "30"], { env: { PATH: process.env.PATH!, HERD_SESSION_ID: id }, stdio: ["ignore", "ignore", "ignore"] });
  const mine = start("w-test-mine");
  const other = start("w-test-other");
  try {
    expect(markedProcesses("w-test-mine")).toEqual([mine.pid]);
    await endWorkerProcesses("w-test-mine", null);
    expect(await mine.exited).toBe(143); // SIGTERM
    expect(markedProcesses("w-test-mine")).toEqual([]);
    expect(markedProcesses("w-test-other")).toEqual([other.pid]);
  } finally {
    mine.kill();
    other.kill();
  }
});
