import { expect, test } from "bun:test";
import { NodeLoads } from "./node-loads.ts";

test("a load sent behind another waits for it; one that waits longer for a busy model waits for that instead", () => {
  const loads = new NodeLoads();
  expect(loads.aheadMs("a", 0)).toBe(0);
  loads.begin("a", { waitMs: 0, loadMs: 3000 }, 0);
  expect(loads.aheadMs("a", 1000)).toBe(2000);
  loads.begin("a", { waitMs: 0, loadMs: 1000 }, 1000); // behind the first: done at 3000 + 1000
  expect(loads.aheadMs("a", 1000)).toBe(3000);
  loads.begin("a", { waitMs: 6000, loadMs: 1000 }, 1000); // its busy victim ends at 7000, after the others
  expect(loads.aheadMs("a", 1000)).toBe(7000);
  expect(loads.aheadMs("b", 1000)).toBe(0);
});

test("a load seen done is no longer waited for, nor one past its expected end", () => {
  const loads = new NodeLoads();
  const done = loads.begin("a", { waitMs: 0, loadMs: 3000 }, 0);
  loads.begin("a", { waitMs: 0, loadMs: 500 }, 0); // behind it: expected done at 3500
  done();
  expect(loads.aheadMs("a", 1000)).toBe(2500);
  expect(loads.aheadMs("a", 4000)).toBe(0);
});

test("a model a load evicts is leaving that node until the load is done or late", () => {
  const loads = new NodeLoads();
  const done = loads.begin("a", { waitMs: 2000, loadMs: 1000, evicts: ["llama3.3:70b"] }, 0);
  expect(loads.evicting("a", "llama3.3:70b", 1000)).toBe(true);
  expect(loads.evicting("a", "mistral:7b", 1000)).toBe(false);
  expect(loads.evicting("b", "llama3.3:70b", 1000)).toBe(false);
  expect(loads.evicting("a", "llama3.3:70b", 3000)).toBe(false); // late: forgotten
  done();
  expect(loads.evicting("a", "llama3.3:70b", 1000)).toBe(false);
});
