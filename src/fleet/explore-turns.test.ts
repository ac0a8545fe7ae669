import { expect, test } from "bun:test";
import { EXPLORE_EVERY, ExploreTurns } from "./explore-turns.ts";

test("one in EXPLORE_EVERY of a model's requests that could explore may, counted per model", () => {
  const turns = new ExploreTurns();
  const due = Array.from({ length: 2 * EXPLORE_EVERY }, () => turns.due("qwen3:8b"));
  expect(due.filter(Boolean)).toHaveLength(2);
  expect(due[EXPLORE_EVERY - 1]).toBe(true);
  expect(turns.due("llama3.2:3b")).toBe(false); // its own count
});

test("the counts are bounded: a thousand and one model names keep a thousand", () => {
  const turns = new ExploreTurns();
  for (let i = 0; i <= 1000; i++) turns.due(`m${i}:1b`);
  expect((turns as unknown as { counts: Map<string, number> }).counts.size).toBe(1000);
});
