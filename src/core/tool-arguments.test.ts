import { expect, test } from "bun:test";
import { argumentsObject, argumentsText, parseArguments } from "./tool-arguments.ts";

test("JSON text is parsed; a value is taken as it is; none or blank text is no arguments", () => {
  expect(parseArguments('{"path":"a.ts"}')).toEqual({ path: "a.ts" });
  expect(parseArguments({ path: "a.ts" })).toEqual({ path: "a.ts" });
  expect(parseArguments(undefined)).toEqual({});
  expect(parseArguments(null)).toEqual({});
  expect(parseArguments("  ")).toEqual({});
  expect(parseArguments("[1]")).toEqual([1]);
  expect(parseArguments("{not json")).toBeNull();
});

test("arguments are an object: JSON text of anything else, or a non-object value, is not one", () => {
  expect(argumentsObject('{"n":1}')).toEqual({ n: 1 });
  expect(argumentsObject({ n: 1 })).toEqual({ n: 1 });
  expect(argumentsObject("")).toEqual({});
  for (const wrong of ["[1]", "42", '"text"', "null", "{not json", [1], 42, true]) expect(argumentsObject(wrong)).toBeNull();
});

test("OpenAI's wire gets JSON text; text is passed on untouched", () => {
  expect(argumentsText({ n: 1 })).toBe('{"n":1}');
  expect(argumentsText(undefined)).toBe("{}");
  expect(argumentsText('{"n": 1}')).toBe('{"n": 1}');
  expect(argumentsText("not json")).toBe("not json");
});
