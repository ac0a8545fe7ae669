import { expect, test } from "bun:test";
import { Turn } from "./rendezvous.ts";

test("a turn's expiry fires when nothing ended it, and end() stops it and makes an open question stale", async () => {
  let expired = 0;
  const lost = new Turn("t-1", "x", null);
  lost.expireAfter(5, () => expired++);
  const ended = new Turn("t-2", "y", null);
  ended.expireAfter(5, () => expired++);
  const { answer } = ended.open("q?", 10_000);
  ended.end();
  expect(await answer).toBeNull();
  await Bun.sleep(20);
  expect(expired).toBe(1);
});
