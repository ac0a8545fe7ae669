import { describe, expect, test } from "bun:test";
import { LearnedSlots, MAX_SLOTS, RAISE_AFTER } from "./slots.ts";

const ran = { wallMs: 2000, ranMs: 1950 };
const waited = { wallMs: 6000, ranMs: 2000 };
const prior = (n: number) => () => n;
/** `n` answers at `others` + 1 at once, none of which waited. */
const clean = (s: LearnedSlots, n: number, others = 0) => {
  for (let i = 0; i < n; i++) s.observe("m1", { othersInFlight: others, ...ran });
};

describe("learned slots", () => {
  test("nothing learned before a wait: the node runs its prior", () => {
    const s = new LearnedSlots(prior(4));
    s.observe("m1", { othersInFlight: 3, ...ran });
    expect(s.slots("m1")).toBeNull();
  });

  test("a wait inside the node while herd ran others there: no more slots than those others", () => {
    const s = new LearnedSlots(prior(4));
    s.observe("m1", { othersInFlight: 2, ...waited });
    expect(s.slots("m1")).toBe(2);
    s.observe("m1", { othersInFlight: 1, ...waited });
    expect(s.slots("m1")).toBe(1);
    expect(s.slots("ultra")).toBeNull();
  });

  test("a wait with nothing else of herd's running there, or a short gap, teaches nothing", () => {
    const s = new LearnedSlots(prior(4));
    s.observe("m1", { othersInFlight: 0, ...waited });
    s.observe("m1", { othersInFlight: 3, wallMs: 600, ranMs: 450 }); // 150 ms: herd's and the network's own time
    s.observe("m1", { othersInFlight: 3, wallMs: 60_000, ranMs: 59_000 }); // 1 s of a minute: noise
    expect(s.slots("m1")).toBeNull();
  });

  test("one slot more after many answers at the node's number without a wait, past the prior too (a raised OLLAMA_NUM_PARALLEL)", () => {
    const s = new LearnedSlots(prior(1));
    clean(s, RAISE_AFTER - 1);
    expect(s.slots("m1")).toBeNull();
    clean(s, 1);
    expect(s.slots("m1")).toBe(2);
    // At 2, an answer running alone says nothing of a third slot.
    clean(s, RAISE_AFTER);
    expect(s.slots("m1")).toBe(2);
    clean(s, RAISE_AFTER, 1);
    expect(s.slots("m1")).toBe(3);
  });

  test("a try proved wrong by a wait goes back, and the next try waits twice as long", () => {
    const s = new LearnedSlots(prior(1));
    clean(s, RAISE_AFTER);
    expect(s.slots("m1")).toBe(2);
    s.observe("m1", { othersInFlight: 1, ...waited });
    expect(s.slots("m1")).toBeNull(); // back at the prior
    clean(s, 2 * RAISE_AFTER - 1);
    expect(s.slots("m1")).toBeNull();
    clean(s, 1);
    expect(s.slots("m1")).toBe(2);
  });

  test("a wait during the count starts it again; no try past MAX_SLOTS", () => {
    const s = new LearnedSlots(prior(4));
    s.observe("m1", { othersInFlight: 1, ...waited });
    clean(s, 2 * RAISE_AFTER - 1);
    s.observe("m1", { othersInFlight: 0, ...waited });
    clean(s, 1);
    expect(s.slots("m1")).toBe(1);
    const top = new LearnedSlots(prior(MAX_SLOTS));
    clean(top, 100 * RAISE_AFTER, MAX_SLOTS - 1);
    expect(top.slots("m1")).toBeNull();
  });

  test("hands the store each node whose slots changed, once; back at the prior, its row goes", () => {
    const s = new LearnedSlots(prior(4));
    s.observe("m1", { othersInFlight: 2, ...waited });
    s.observe("m1", { othersInFlight: 1, ...waited });
    expect(s.takeChanged()).toEqual([{ nodeId: "m1", slots: 1 }]);
    s.observe("m1", { othersInFlight: 0, ...ran });
    expect(s.takeChanged()).toEqual([]);
    const back = new LearnedSlots(prior(2));
    back.observe("m1", { othersInFlight: 1, ...waited });
    back.takeChanged();
    clean(back, 2 * RAISE_AFTER);
    expect(back.takeChanged()).toEqual([{ nodeId: "m1", slots: null }]);
  });

  test("starts from what the store kept", () => {
    const s = new LearnedSlots(prior(4), [{ nodeId: "m1", slots: 1 }, { nodeId: "m2", slots: 6 }, { nodeId: "m3", slots: null }, { nodeId: "m4", slots: 1000 }]);
    expect([s.slots("m1"), s.slots("m2"), s.slots("m3"), s.slots("m4")]).toEqual([1, 6, null, null]);
    expect(s.takeChanged()).toEqual([]);
  });
});
