import { expect, test } from "bun:test";
import { NodeOrdering } from "./ordering.ts";

/** The scorer's ranking, best first: only the node ids matter to the ordering. */
const ranked = (...ids: string[]) => ids.map((nodeId) => ({ nodeId }));

const ids = (scored: { nodeId: string }[]) => scored.map((s) => s.nodeId);
const noLoad = () => 0;

test("the score and finish-time strategies try the nodes in the order they were ranked in", () => {
  for (const strategy of ["score", "finish-time"] as const) expect(ids(new NodeOrdering().order(strategy, "m", ranked("c", "a", "b"), noLoad))).toEqual(["c", "a", "b"]);
});

test("least-connections tries the node with the fewest requests in flight first, equal loads by node id", () => {
  const inFlight: Record<string, number> = { a: 3, b: 1, c: 1, d: 0 };
  expect(ids(new NodeOrdering().order("least-connections", "m", ranked("a", "c", "b", "d"), (id) => inFlight[id]!))).toEqual(["d", "b", "c", "a"]);
});

test("round-robin starts each request of a model one node further along the nodes sorted by id, whatever their scores", () => {
  const ordering = new NodeOrdering();
  const next = () => ids(ordering.order("round-robin", "m", ranked("c", "a", "b"), noLoad));
  expect([next(), next(), next(), next()]).toEqual([
    ["a", "b", "c"],
    ["b", "c", "a"],
    ["c", "a", "b"],
    ["a", "b", "c"],
  ]);
});

test("round-robin keeps one turn per model", () => {
  const ordering = new NodeOrdering();
  const first = (model: string) => ordering.order("round-robin", model, ranked("a", "b"), noLoad)[0]!.nodeId;
  expect([first("m"), first("m"), first("other"), first("m"), first("other")]).toEqual(["a", "b", "a", "a", "b"]);
});

test("a single candidate is tried as it is, and does not use up a round-robin turn", () => {
  const ordering = new NodeOrdering();
  for (const strategy of ["score", "round-robin", "least-connections"] as const) expect(ids(ordering.order(strategy, "m", ranked("x"), noLoad))).toEqual(["x"]);
  expect(ids(ordering.order("round-robin", "m", ranked("b", "a"), noLoad))).toEqual(["a", "b"]);
});

test("the ordering does not reorder the scorer's list in place", () => {
  const list = ranked("c", "a", "b");
  new NodeOrdering().order("least-connections", "m", list, noLoad);
  new NodeOrdering().order("round-robin", "m", list, noLoad);
  expect(ids(list)).toEqual(["c", "a", "b"]);
});
