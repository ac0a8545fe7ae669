import { expect, test } from "bun:test";
import { claimHeld, heldToClock } from "./claimed-times.ts";

const ms = (n: number) => n * 1e6;

test("an honest streamed answer's durations are kept as the node said them", () => {
  // 100 ms of prompt, then 20 tokens over a second; herd saw the first byte after 160 ms, the last after 1.1 s.
  const usage = { type: "usage" as const, promptTokens: 300, promptNs: ms(100), completionTokens: 20, evalNs: ms(1000), loadNs: ms(5) };
  expect(heldToClock(usage, { firstByteMs: 160, lastByteMs: 1110, whole: false })).toEqual({ ...usage, totalNs: undefined });
});

test("a streamed answer's decode took at least herd's time from its first byte to its last, less the allowance", () => {
  const held = heldToClock({ type: "usage", completionTokens: 1000, evalNs: 1 }, { firstByteMs: 100, lastByteMs: 1600, whole: false });
  expect(held.evalNs).toBeCloseTo(ms(1500 - 20 - 150));
});

test("an MLX server's stream, which claims no decode time, is timed by herd's clock", () => {
  expect(heldToClock({ type: "usage", completionTokens: 50 }, { firstByteMs: 200, lastByteMs: 700, whole: false }).evalNs).toBeCloseTo(ms(500));
});

test("what came before the first byte took at least herd's wait for it: a shortfall goes to the prompt", () => {
  const held = heldToClock({ type: "usage", promptTokens: 4000, promptNs: 1, completionTokens: 10, evalNs: ms(100) }, { firstByteMs: 1000, lastByteMs: 1100, whole: false });
  // least(1000 ms) = 880 ms, less the first token's 10 ms.
  expect(held.promptNs).toBeCloseTo(ms(870));
});

test("a whole answer's parts took at least the whole wait: a shortfall goes to the decode", () => {
  const held = heldToClock({ type: "usage", promptTokens: 30, promptNs: 1, completionTokens: 20, evalNs: 1, loadNs: 1 }, { firstByteMs: 1500, lastByteMs: 1500, whole: true });
  expect(held.loadNs).toBe(1);
  expect(held.promptNs).toBe(1);
  expect(held.evalNs).toBeCloseTo(ms(1500 - 20 - 150) - 2);
});

test("no part is longer than the whole wait, and a part the node does not claim is not made up", () => {
  const held = heldToClock({ type: "usage", loadNs: ms(60_000), promptNs: ms(9_000), totalNs: ms(99_000), completionTokens: 5 }, { firstByteMs: 300, lastByteMs: 300, whole: true });
  expect(held).toMatchObject({ loadNs: ms(300), promptNs: ms(300), totalNs: ms(300), evalNs: undefined });
});

test("a load's claimed duration is held to the call's own time", () => {
  expect(claimHeld(ms(9_000), 300)).toBe(ms(300));
  expect(claimHeld(1, 10_000)).toBeCloseTo(ms(10_000 - 20 - 1000));
  expect(claimHeld(ms(290), 300)).toBe(ms(290));
});
