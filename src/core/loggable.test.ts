import { expect, test } from "bun:test";
import { loggable } from "./loggable.ts";

test("control characters and lone surrogates become U+FFFD, one each; printable text is kept as it is", () => {
  expect(loggable("node-1\r\n2026 INFO forged \u001b[31m", 100)).toBe("node-1\uFFFD\uFFFD2026 INFO forged \uFFFD[31m");
  expect(loggable("a\tb\u0000c\u007fd\u009be\u2028f\ud800", 100)).toBe("a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf\uFFFD");
  expect(loggable("Zoë 💥 «ok»", 100)).toBe("Zoë 💥 «ok»");
});

test("text past maxChars is cut and marked, never between the halves of a character", () => {
  expect(loggable("abcdef", 3)).toBe("abc…");
  expect(loggable("abc", 3)).toBe("abc");
  expect(loggable("ab💥c", 3)).toBe("ab…");
});
