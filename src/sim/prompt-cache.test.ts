import { describe, expect, test } from "bun:test";
import { PromptSlots } from "./prompt-cache.ts";

describe("PromptSlots", () => {
  test("a prompt extending the slot's last sequence evaluates only the new tokens", () => {
    const slots = new PromptSlots(1);
    const first = slots.claim([1, 2, 3]);
    expect(first.cached).toBe(0);
    slots.release(first.slot, [1, 2, 3, 4]);
    expect(slots.claim([1, 2, 3, 4, 5, 6]).cached).toBe(4);
  });

  test("a prompt wholly cached still evaluates its last token", () => {
    const slots = new PromptSlots(1);
    const { slot } = slots.claim([1, 2, 3]);
    slots.release(slot, [1, 2, 3]);
    expect(slots.claim([1, 2, 3]).cached).toBe(2);
  });

  test("the free slot with the longest shared prefix is taken; a tie goes to the lowest slot", () => {
    const slots = new PromptSlots(2);
    const a = slots.claim([1, 2]);
    const b = slots.claim([7, 8]);
    slots.release(a.slot, [1, 2, 3]);
    slots.release(b.slot, [7, 8, 9]);
    const second = slots.claim([7, 8, 9, 10]);
    expect(second).toEqual({ slot: b.slot, cached: 3 });
    // Nothing shared with the one free slot: it is overwritten.
    expect(slots.claim([5]).slot).toBe(a.slot);
  });

  test("a busy slot is not shared; without a parallel limit a new slot is added", () => {
    const slots = new PromptSlots();
    const a = slots.claim([1, 2]);
    slots.release(a.slot, [1, 2, 3]);
    const busy = slots.claim([1, 2, 3, 4]);
    const other = slots.claim([1, 2, 3, 4]);
    expect(busy.cached).toBe(3);
    expect(other.slot).not.toBe(busy.slot);
    expect(other.cached).toBe(0);
  });

  test("more requests than parallel slots is the residency's bug, not a silent miss", () => {
    const slots = new PromptSlots(1);
    slots.claim([1]);
    expect(() => slots.claim([1])).toThrow("no free cache slot");
  });
});
