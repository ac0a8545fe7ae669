import { describe, expect, test } from "bun:test";
import { LearnedSlots, RAISE_AFTER } from "./slots.ts";

const ran = { wallMs: 2000, ranMs: 1950 };
const waited = { wallMs: 6000, ranMs: 2000 };

describe("learned slots", () => {
  test("nothing learned before a wait: the node runs what herd assumes", () => {
    const s = new LearnedSlots(4);
    s.observe("m1", { othersInFlight: 3, ...ran });
    expect(s.slots("m1")).toBeNull();
  });

  test("a wait inside the node while herd ran others there: no more slots than those others", () => {
    const s = new LearnedSlots(4);
    s.observe("m1", { othersInFlight: 2, ...waited });
    expect(s.slots("m1")).toBe(2);
    s.observe("m1", { othersInFlight: 1, ...waited });
    expect(s.slots("m1")).toBe(1);
    expect(s.slots("ultra")).toBeNull();
  });

  test("a wait with nothing else of herd's running there, or a short gap, teaches nothing", () => {
    const s = new LearnedSlots(4);
    s.observe("m1", { othersInFlight: 0, ...waited });
    s.observe("m1", { othersInFlight: 3, wallMs: 600, ranMs: 450 }); // 150 ms: herd's and the network's own time
    s.observe("m1", { othersInFlight: 3, wallMs: 60_000, ranMs: 59_000 }); // 1 s of a minute: noise
    expect(s.slots("m1")).toBeNull();
  });

  test("recovers one slot at a time after many answers at the learned number without a wait, up to the assumption", () => {
    const s = new LearnedSlots(3);
    s.observe("m1", { othersInFlight: 1, ...waited });
    const clean = (n: number) => {
      for (let i = 0; i < n; i++) s.observe("m1", { othersInFlight: 0, ...ran });
    };
    clean(RAISE_AFTER - 1);
    expect(s.slots("m1")).toBe(1);
    clean(1);
    expect(s.slots("m1")).toBe(2);
    // At 2, an answer running alone says nothing of a second slot.
    clean(RAISE_AFTER);
    expect(s.slots("m1")).toBe(2);
    for (let i = 0; i < RAISE_AFTER; i++) s.observe("m1", { othersInFlight: 1, ...ran });
    expect(s.slots("m1")).toBeNull();
  });

  test("a wait during the recovery starts the count again", () => {
    const s = new LearnedSlots(4);
    s.observe("m1", { othersInFlight: 1, ...waited });
    for (let i = 0; i < RAISE_AFTER - 1; i++) s.observe("m1", { othersInFlight: 0, ...ran });
    s.observe("m1", { othersInFlight: 0, ...waited });
    s.observe("m1", { othersInFlight: 0, ...ran });
    expect(s.slots("m1")).toBe(1);
  });

  test("hands the store each node whose slots changed, once; a clean answer that changes nothing is not a change", () => {
    const s = new LearnedSlots(4);
    s.observe("m1", { othersInFlight: 2, ...waited });
    s.observe("m1", { othersInFlight: 1, ...waited });
    expect(s.takeChanged()).toEqual([{ nodeId: "m1", slots: 1 }]);
    s.observe("m1", { othersInFlight: 0, ...ran });
    expect(s.takeChanged()).toEqual([]);
    const back = new LearnedSlots(2);
    back.observe("m1", { othersInFlight: 1, ...waited });
    back.takeChanged();
    for (let i = 0; i < RAISE_AFTER; i++) back.observe("m1", { othersInFlight: 0, ...ran });
    expect(back.takeChanged()).toEqual([{ nodeId: "m1", slots: null }]); // back to the assumption: its row goes
  });

  test("starts from what the store kept; a kept figure at or over the assumption says nothing", () => {
    const s = new LearnedSlots(4, [{ nodeId: "m1", slots: 1 }, { nodeId: "m2", slots: 4 }, { nodeId: "m3", slots: null }]);
    expect([s.slots("m1"), s.slots("m2"), s.slots("m3")]).toEqual([1, null, null]);
    expect(s.takeChanged()).toEqual([]);
  });
});
