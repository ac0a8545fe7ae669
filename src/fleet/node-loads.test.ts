import { expect, test } from "bun:test";
import { NodeLoads } from "./node-loads.ts";

test("a load sent behind another waits for it; one that waits longer for a busy model waits for that instead", () => {
  const loads = new NodeLoads();
  expect(loads.aheadMs("a", 0)).toBe(0);
  loads.begin("a", { model: "mistral:7b", waitMs: 0, loadMs: 3000 }, 0);
  expect(loads.aheadMs("a", 1000)).toBe(2000);
  loads.begin("a", { model: "mistral:7b", waitMs: 0, loadMs: 1000 }, 1000); // behind the first: done at 3000 + 1000
  expect(loads.aheadMs("a", 1000)).toBe(3000);
  loads.begin("a", { model: "mistral:7b", waitMs: 6000, loadMs: 1000 }, 1000); // its busy victim ends at 7000, after the others
  expect(loads.aheadMs("a", 1000)).toBe(7000);
  expect(loads.aheadMs("b", 1000)).toBe(0);
});

test("a load seen done is no longer waited for, nor one past its expected end", () => {
  const loads = new NodeLoads();
  const done = loads.begin("a", { model: "mistral:7b", waitMs: 0, loadMs: 3000 }, 0);
  loads.begin("a", { model: "mistral:7b", waitMs: 0, loadMs: 500 }, 0); // behind it: expected done at 3500
  done();
  expect(loads.aheadMs("a", 1000)).toBe(2500);
  expect(loads.aheadMs("a", 4000)).toBe(0);
});

test("a model a load evicts is leaving that node until the load is done or late", () => {
  const loads = new NodeLoads();
  const done = loads.begin("a", { model: "mistral:7b", waitMs: 2000, loadMs: 1000, evicts: ["llama3.3:70b"] }, 0);
  expect(loads.evicting("a", "llama3.3:70b", 1000)).toBe(true);
  expect(loads.evicting("a", "mistral:7b", 1000)).toBe(false);
  expect(loads.evicting("b", "llama3.3:70b", 1000)).toBe(false);
  expect(loads.evicting("a", "llama3.3:70b", 3000)).toBe(false); // late: forgotten
  done();
  expect(loads.evicting("a", "llama3.3:70b", 1000)).toBe(false);
});

test("a request of a model a load evicts there waits for that load: until it is done, late, or its budget is spent", async () => {
  const loads = new NodeLoads();
  const signal = new AbortController().signal;
  expect(loads.evicted("a", "llama3.3:70b", 1000, signal)).toBeNull();
  const done = loads.begin("a", { model: "mistral:7b", loadMs: 60_000, evicts: ["llama3.3:70b"] });
  expect(loads.evicted("a", "mistral:7b", 1000, signal)).toBeNull();
  const waiting = loads.evicted("a", "llama3.3:70b", 1000, signal)!;
  let waited: number | null = null;
  void waiting.then((ms) => (waited = ms));
  await Bun.sleep(20);
  expect(waited).toBeNull();
  done();
  expect(await waiting).toBeGreaterThanOrEqual(15);
  // Its budget spent first: it goes on (its call then fails in time); late, likewise.
  loads.begin("a", { model: "mistral:7b", loadMs: 60_000, evicts: ["llama3.3:70b"] });
  expect(await loads.evicted("a", "llama3.3:70b", 30, signal)).toBeLessThan(1000);
  loads.begin("b", { model: "mistral:7b", loadMs: 30, evicts: ["llama3.3:70b"] });
  expect(await loads.evicted("b", "llama3.3:70b", 60_000, signal)).toBeLessThan(1000);
  const gone = new AbortController();
  const cut = loads.evicted("a", "llama3.3:70b", 60_000, gone.signal)!;
  gone.abort(new Error("client gone"));
  await expect(cut).rejects.toThrow("client gone");
});

test("what is left of a model's load there counts its wait for room and the loads ahead of it", () => {
  const loads = new NodeLoads();
  loads.begin("a", { model: "gemma3:12b", loadMs: 3000 }, 0);
  loads.begin("a", { model: "mistral:7b", waitMs: 1000, loadMs: 2000 }, 0); // behind gemma's: done at 5000
  expect(loads.loadLeftMs("a", "mistral:7b", 1000)).toBe(4000);
  expect(loads.loadLeftMs("a", "qwen3:8b", 1000)).toBeNull();
  expect(loads.loadLeftMs("a", "mistral:7b", 6000)).toBeNull(); // late
});
