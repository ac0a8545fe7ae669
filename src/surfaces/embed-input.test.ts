import { expect, test } from "bun:test";
import { embedBody } from "./embed-input.ts";

test("no text is the route's own empty value under the name its node reads, the other name dropped", () => {
  for (const empty of [{}, { input: null }, { input: "" }, { input: [] }, { prompt: "" }, { prompt: [] }]) {
    expect([empty, embedBody({ model: "m", ...empty }, false)]).toEqual([empty, { model: "m", input: [] }]);
    expect([empty, embedBody({ model: "m", ...empty }, true)]).toEqual([empty, { model: "m", prompt: "" }]);
  }
});

test("texts are put under the route's name; a wrong type names the field the client used", () => {
  expect(embedBody({ model: "m", prompt: ["a", "b"] }, false)).toEqual({ model: "m", input: ["a", "b"] });
  expect(embedBody({ model: "m", input: ["a"] }, true)).toEqual({ model: "m", prompt: "a" });
  expect(embedBody({ model: "m", input: ["a", ""] }, false)).toBe("input: expected a string or a list of non-empty strings");
  expect(embedBody({ model: "m", input: 5 }, true)).toBe("input: expected a string");
  expect(embedBody({ model: "m", prompt: ["a", "b"] }, true)).toBe("prompt: /api/embeddings embeds one text; send a list to /api/embed");
});
