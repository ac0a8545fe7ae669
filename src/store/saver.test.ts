import { expect, test } from "bun:test";
import { startSaver } from "./saver.ts";

test("the saver saves on its timer, and once more when it stops", async () => {
  let saves = 0;
  const saver = startSaver(() => saves++, 10);
  await Bun.sleep(35);
  expect(saves).toBeGreaterThanOrEqual(1);
  const before = saves;
  saver.stop();
  expect(saves).toBe(before + 1);
  await Bun.sleep(25);
  expect(saves).toBe(before + 1); // the timer is gone
});
