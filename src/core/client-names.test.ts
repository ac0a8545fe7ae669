import { expect, test } from "bun:test";
import { nameFault, nameProblem, namesProblem } from "./client-names.ts";

test("a name is whole Unicode characters: a lone surrogate is refused, any other character is not", () => {
  expect(nameFault("qwen3:8b")).toBeNull();
  expect(nameFault("模型:latest 🦙")).toBeNull();
  expect(nameFault("\ud800")).toContain("unpaired surrogate");
  expect(nameFault("a\udc00b")).toContain("unpaired surrogate");
});

test("a name over 256 characters, or a list over 32, is refused under the field's name", () => {
  expect(nameProblem("model", "m".repeat(256))).toBeNull();
  expect(nameProblem("model", "m".repeat(257))).toBe("model: at most 256 characters (got 257)");
  expect(namesProblem("metadata.tags", Array(33).fill("t"))).toBe("metadata.tags: at most 32 entries (got 33)");
  expect(namesProblem("fallback_models", ["a", "\udc00"])).toContain("fallback_models[1]: expected a name of whole Unicode");
});
