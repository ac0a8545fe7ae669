import { expect, test } from "bun:test";
import { pasteable, TEXT_LEAD } from "./paste.ts";

test("control characters become their control pictures; text, newlines and tabs stay", () => {
  expect(pasteable("a\u0003b\u0004c\u001b[201~d\u007f")).toBe("a␃b␄c␛[201~d␡");
  expect(pasteable("line 1\r\nline 2\n\tend ✓")).toBe("line 1\nline 2\n\tend ✓");
  expect(pasteable("\u0000\r")).toBe("␀␍");
});

test("a turn that opens with ! or / (a composer's command) gets herd's first line; its own text follows whole", () => {
  expect(pasteable("!touch bang.txt")).toBe(`${TEXT_LEAD}\n!touch bang.txt`);
  expect(pasteable("  /exit\nnow")).toBe(`${TEXT_LEAD}\n  /exit\nnow`);
  expect(pasteable("fix a/b! then /exit")).toBe("fix a/b! then /exit");
});
