import { expect, test } from "bun:test";
import { AfterAnswer } from "./after-answer.ts";

test("work is done after the turn that queued it, in order, in one pass; a failing piece does not stop the rest", async () => {
  const after = new AfterAnswer();
  const done: number[] = [];
  after.later(() => done.push(1));
  after.later(() => {
    throw new Error("broken");
  });
  after.later(() => done.push(2));
  expect(done).toEqual([]);
  await Promise.resolve(); // microtasks are still the same turn
  expect(done).toEqual([]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(done).toEqual([1, 2]);
});

test("flush does what is queued at once (a stop, before the store closes), and the turn's pass then finds nothing", async () => {
  const after = new AfterAnswer();
  const done: number[] = [];
  after.later(() => done.push(1));
  after.flush();
  expect(done).toEqual([1]);
  after.later(() => done.push(2));
  await new Promise((resolve) => setImmediate(resolve));
  expect(done).toEqual([1, 2]);
});
