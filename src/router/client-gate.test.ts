import { expect, test } from "bun:test";
import { ClientGate } from "./client-gate.ts";

test("a client gets as many places as its cap, and another once one is left", () => {
  const gate = new ClientGate();
  expect([gate.enter("ci", 2), gate.enter("ci", 2), gate.enter("ci", 2)]).toEqual([true, true, false]);
  gate.leave("ci");
  expect(gate.enter("ci", 2)).toBe(true);
  expect(gate.enter("ci", 2)).toBe(false);
});

test("each client has its own count", () => {
  const gate = new ClientGate();
  expect(gate.enter("ci", 1)).toBe(true);
  expect(gate.enter("laptop", 1)).toBe(true);
  expect(gate.enter("ci", 1)).toBe(false);
});

test("a cap of 0 is no cap", () => {
  const gate = new ClientGate();
  for (let i = 0; i < 100; i++) expect(gate.enter("ci", 0)).toBe(true);
});

test("the count is the requests in flight now: a lowered cap applies at once, and extra leaves do not bank places", () => {
  const gate = new ClientGate();
  for (let i = 0; i < 3; i++) gate.enter("ci", 0);
  expect(gate.enter("ci", 3)).toBe(false);
  for (let i = 0; i < 5; i++) gate.leave("ci");
  expect([gate.enter("ci", 1), gate.enter("ci", 1)]).toEqual([true, false]);
});
