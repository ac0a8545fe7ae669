import { describe, expect, test } from "bun:test";
import { SessionAffinity } from "./affinity.ts";

const M = "qwen3:8b";
const slots = (n: number) => () => n;
const loaded = () => true;

describe("session affinity", () => {
  test("names the node that served the session's last turn, for that model only", () => {
    const a = new SessionAffinity();
    a.served("s1", "mini", M, 0);
    expect(a.holder("s1", M, slots(1), loaded, 1000)).toBe("mini");
    expect(a.holder("s1", "llama3.2:3b", slots(1), loaded, 1000)).toBeNull();
    expect(a.holder("s2", M, slots(1), loaded, 1000)).toBeNull();
    a.served("s1", "studio", M, 2000);
    expect(a.holder("s1", M, slots(1), loaded, 3000)).toBe("studio");
  });

  test("the prompt is gone once as many other sessions as the node has slots have used the model there since", () => {
    const a = new SessionAffinity();
    a.served("s1", "mini", M, 0);
    a.served("s2", "mini", M, 1);
    expect(a.holder("s1", M, slots(2), loaded, 2)).toBe("mini");
    a.served(undefined, "mini", M, 3); // a request without a session takes a slot too
    expect(a.holder("s1", M, slots(2), loaded, 4)).toBeNull();
    // The same session again takes its own slot, not another's.
    a.served("s2", "mini", M, 5);
    a.served("s2", "mini", M, 6);
    expect(a.holder("s2", M, slots(1), loaded, 7)).toBe("mini");
    // Another model on the node has slots of its own.
    a.served("s3", "mini", "llama3.2:3b", 8);
    expect(a.holder("s2", M, slots(1), loaded, 9)).toBe("mini");
  });

  test("nothing is cached on a node that no longer has the model loaded", () => {
    const a = new SessionAffinity();
    a.served("s1", "mini", M, 0);
    expect(a.holder("s1", M, slots(1), (id) => id !== "mini", 1)).toBeNull();
  });

  test("bounded: the least recently served session goes past the cap, a silent one past the age limit", () => {
    const a = new SessionAffinity(3, 60_000);
    for (const s of ["s1", "s2", "s3"]) a.served(s, s, M, 0);
    a.served("s1", "s1", M, 1); // s1 used again: s2 is now the oldest
    a.served("s4", "s4", M, 2);
    expect(a.size).toBe(3);
    expect(a.holder("s2", M, slots(4), loaded, 3)).toBeNull();
    expect(a.holder("s1", M, slots(4), loaded, 3)).toBe("s1");
    expect(a.holder("s4", M, slots(4), loaded, 60_003)).toBeNull();
    expect(a.size).toBe(2);
  });

  test("many client-chosen keys never hold more than the cap", () => {
    const a = new SessionAffinity(100);
    for (let i = 0; i < 10_000; i++) a.served(`k${i}`, "mini", M, i);
    expect(a.size).toBe(100);
  });
});
