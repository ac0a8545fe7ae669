import { expect, test } from "bun:test";
import { CATEGORIES, describeModel, MODEL_CATALOG } from "./model-catalog.ts";
import { modelTraits } from "./model-traits.ts";

test("every catalog model's name reads as the kind of its category (creative and fast-chat models are general)", () => {
  for (const m of MODEL_CATALOG) {
    const kind = m.category === "creative" || m.category === "fast-chat" ? "general" : m.category;
    expect(`${m.model}: ${modelTraits(m.model).category}`).toBe(`${m.model}: ${kind}`);
  }
});

test("the catalog covers every category", () => {
  expect(new Set(MODEL_CATALOG.map((m) => m.category))).toEqual(new Set(CATEGORIES));
});

test("a model the catalog does not know is described from its name", () => {
  expect(describeModel("hf.co/org/phi3:14b")).toEqual({ display_name: "Phi3 14B", category: "general" });
  expect(describeModel("exaone-deep:latest")).toEqual({ display_name: "Exaone Deep", category: "reasoning" });
  expect(describeModel("qwen2.5:0.5b").category).toBe("fast-chat");
});
