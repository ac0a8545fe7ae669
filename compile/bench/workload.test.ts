import { expect, test } from "bun:test";
import { AGENT_MODEL, COMPETING_SESSIONS, competingSessions, RARE_MODEL, SEEDS, workload } from "./workload.ts";

test("a seed always gives the same workload, in arrival order, with every stream in it", () => {
  const jobs = workload(SEEDS[0]!);
  expect(workload(SEEDS[0]!)).toEqual(jobs);
  expect(workload(SEEDS[1]!)).not.toEqual(jobs);
  expect(jobs.map((j) => j.atMs)).toEqual(jobs.map((j) => j.atMs).sort((a, b) => a - b));
  expect(new Set(jobs.map((j) => j.kind))).toEqual(new Set(["chat", "burst", "code", "7b", "embed", "switch", "rare", "long", "agent"]));
  expect(jobs.filter((j) => j.kind === "rare").every((j) => j.model === RARE_MODEL)).toBe(true);
});

test("an agent session opens with the system prompt every session shares, then a task of its own, and has later turns", () => {
  const sessions = workload(SEEDS[0]!).filter((j) => j.kind === "agent");
  const firsts = sessions.map((j) => j.body.messages as { role: string; content: string }[]);
  expect(new Set(firsts.map((m) => m[0]!.content)).size).toBe(1);
  expect(firsts.every((m) => m[0]!.role === "system" && m[1]!.role === "user")).toBe(true);
  expect(new Set(firsts.map((m) => m[1]!.content)).size).toBe(sessions.length);
  expect(sessions.every((j) => j.session!.next.length >= 3)).toBe(true);
});

test("the competing sessions: agents on one model at once, each with its own task and 6–10 later turns, the same for a seed", () => {
  const sessions = competingSessions(SEEDS[0]!);
  expect(competingSessions(SEEDS[0]!)).toEqual(sessions);
  expect(sessions).toHaveLength(COMPETING_SESSIONS);
  expect(sessions.every((j) => j.model === AGENT_MODEL && j.atMs < 5000 && j.session!.next.length >= 6)).toBe(true);
  expect(new Set(sessions.map((j) => (j.body.messages as { content: string }[])[1]!.content)).size).toBe(COMPETING_SESSIONS);
});
