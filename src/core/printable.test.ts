import { expect, test } from "bun:test";
import { echoed, oneLine, shortLine } from "./printable.ts";

test("each run of controls, format characters and line separators is one space; printable text is kept as it is", () => {
  expect(oneLine("node-1\r\n2026 INFO forged \u001b[31m")).toBe("node-1 2026 INFO forged  [31m");
  expect(oneLine("a\tb\u0000c\u007fd\u009be\u2028f\u202eg\u200bh")).toBe("a b c d e f g h");
  expect(oneLine("Zoë 💥 «ok»")).toBe("Zoë 💥 «ok»");
});

test("an echo shows each unprintable character as its escape, cut to its length", () => {
  expect(echoed("a\r\nb")).toBe("a\\u000d\\u000ab");
  expect(echoed("x".repeat(70))).toBe(`${"x".repeat(60)}…`);
});

test("a short line: one line, lone surrogates replaced, cut and marked past its length, never between the halves of a character", () => {
  expect(shortLine("a\r\nb\ud800", 100)).toBe("a b\uFFFD");
  expect(shortLine("abcdef", 3)).toBe("abc…");
  expect(shortLine("abc", 3)).toBe("abc");
  expect(shortLine("ab💥c", 3)).toBe("ab…");
});
