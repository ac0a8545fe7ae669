import { expect, test } from "bun:test";
import { ModelFacts } from "./model-facts.ts";
import { testFleet } from "./test-fixtures.ts";

test("askLoaded asks after a node's loaded models a few at a time, however many it lists", () => {
  const loaded = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`m${i}:1b`, 1]));
  // Its Ollama unreachable: the lookups end at once, and no test leaves loopback.
  const { registry } = testFleet([{ id: "a", loaded, ollamaDown: true }]);
  const facts = new ModelFacts(registry, () => ({ maxBytes: 1_000_000 }) as never);
  const asked = () => (facts as unknown as { known: Map<string, unknown> }).known.size;
  facts.askLoaded();
  expect(asked()).toBe(8);
  facts.askLoaded();
  expect(asked()).toBe(16);
});
