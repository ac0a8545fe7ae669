import { expect, test } from "bun:test";
import { globToRegExp, resolveAlias } from "./aliases.ts";

test("an exact modelMap key beats a glob written before it", () => {
  expect(resolveAlias("claude-haiku-4-5", { "claude-*": "qwen3:32b", "claude-haiku-4-5": "llama3.2:3b" })).toBe("llama3.2:3b");
});

test("of several matching globs, the first written wins", () => {
  const modelMap = { "claude-sonnet-*": "qwen2.5-coder:32b", "claude-*": "qwen3:32b" };
  expect(resolveAlias("claude-sonnet-4-5", modelMap)).toBe("qwen2.5-coder:32b");
  expect(resolveAlias("claude-opus-4-1", modelMap)).toBe("qwen3:32b");
});

test("a model no entry matches is left as it is", () => {
  expect(resolveAlias("llama3.2:3b", { "claude-*": "qwen3:32b" })).toBe("llama3.2:3b");
  expect(resolveAlias("llama3.2:3b", {})).toBe("llama3.2:3b");
});

test("a glob matches the whole name, ignoring case; * stands for any run of characters, even none", () => {
  const re = globToRegExp("claude-*");
  expect(["claude-", "claude-sonnet-4-5", "Claude-Opus"].map((m) => re.test(m))).toEqual([true, true, true]);
  expect(re.test("my-claude-x")).toBe(false);
  expect(globToRegExp("*-codex").test("gpt-5-codex")).toBe(true);
  expect(globToRegExp("gpt-*-codex").test("gpt-5-codex-mini")).toBe(false);
});

test("every other character of a glob is literal, regex characters included", () => {
  expect(globToRegExp("gpt-4.1*").test("gpt-4x1-mini")).toBe(false);
  expect(globToRegExp("gpt-4.1*").test("gpt-4.1-mini")).toBe(true);
  expect(globToRegExp("org/(model)+*").test("org/(model)+v2")).toBe(true);
  expect(globToRegExp("org/(model)+*").test("org/modelmodel")).toBe(false);
});

test("a name that is a property of every object is a model name, not a map entry", () => {
  for (const name of ["toString", "constructor", "__proto__", "valueOf"]) expect(resolveAlias(name, { "claude-*": "qwen3:8b" })).toBe(name);
});
