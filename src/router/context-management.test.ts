import { expect, test } from "bun:test";
import { fitToContext, promptLimit } from "./context-management.ts";
import type { Message } from "../core/conversation.ts";
import { textTokens } from "../core/tokens.ts";

const CLEARED = "[tool result cleared by herd to fit the model's context window]";

/** A coding agent's history: the task, then one tool call and its result per entry of `results`. */
function conversation(results: string[]): { messages: Message[] } {
  const turns = results.flatMap((content, i): Message[] => [
    { role: "assistant", content: "", toolCalls: [{ name: "read", arguments: { path: `file${i}.ts` } }] },
    { role: "tool", content },
  ]);
  return { messages: [{ role: "user", content: "fix the failing test" }, ...turns] };
}

const toolContents = (body: { messages: Message[] }) => body.messages.filter((m) => m.role === "tool").map((m) => m.content);
const file = (i: number) => `export const value${i} = ${i};\n`.repeat(200);
/** What clearing one result of `file(i)` saves. */
const saving = async (i: number) => (await textTokens(file(i))) - (await textTokens(CLEARED));

test("a prompt that fits is left alone", async () => {
  const body = conversation([file(0), file(1), file(2), file(3)]);
  expect(await fitToContext(body, 5000, 5000)).toEqual({ tokens: 5000, note: null });
  expect(toolContents(body)).toEqual([file(0), file(1), file(2), file(3)]);
});

test("the oldest tool results are cleared first, only until the prompt fits, and the note says what was done", async () => {
  const body = conversation([file(0), file(1), file(2), file(3), file(4), file(5)]);
  const tokens = 20_000;
  const after = tokens - (await saving(0)) - (await saving(1));
  const fitted = await fitToContext(body, tokens, after + 1);
  expect(fitted).toEqual({ tokens: after, note: `cleared the 2 oldest tool result(s) (${tokens} → ${after} tokens) to fit ${after + 1}` });
  expect(toolContents(body)).toEqual([CLEARED, CLEARED, file(2), file(3), file(4), file(5)]);
  expect(body.messages[0]).toEqual({ role: "user", content: "fix the failing test" });
  expect(body.messages.filter((m) => m.role === "assistant")).toHaveLength(6); // the calls stay: the model still sees what ran
});

test("when clearing the older ones is not enough, the newest three are cleared too (force all), oldest first, and the note says so", async () => {
  const body = conversation([file(0), file(1), file(2), file(3), file(4)]);
  const tokens = 20_000;
  const after = tokens - (await saving(0)) - (await saving(1)) - (await saving(2));
  const fitted = await fitToContext(body, tokens, after);
  expect(toolContents(body)).toEqual([CLEARED, CLEARED, CLEARED, file(3), file(4)]);
  expect(fitted).toEqual({ tokens: after, note: `cleared the 2 oldest tool result(s) and 1 of the 3 newest (force all: still too long without them) (${tokens} → ${after} tokens) to fit ${after}` });
});

test("one huge tool result alone is cleared; a prompt still too long with every result cleared is left to the caller to refuse", async () => {
  const body = conversation([file(0)]);
  const fitted = await fitToContext(body, 20_000, 10);
  expect(toolContents(body)).toEqual([CLEARED]);
  expect(fitted.note).toStartWith("cleared 1 of the 1 newest (force all");
  expect(fitted.tokens).toBeGreaterThan(10);
  expect(await fitToContext({}, 20_000, 10)).toEqual({ tokens: 20_000, note: null });
  expect(await fitToContext(conversation([]), 20_000, 10)).toEqual({ tokens: 20_000, note: null });
});

test("a tool result already cleared does not count among the newest three", async () => {
  const body = conversation([CLEARED, file(1), file(2), file(3), file(4)]);
  const fitted = await fitToContext(body, 20_000, 20_000 - (await saving(1)));
  expect(toolContents(body)).toEqual([CLEARED, CLEARED, file(2), file(3), file(4)]);
  expect(fitted.note).toStartWith("cleared the 1 oldest tool result(s)");
});

test("the prompt budget is the model's context less room for the reply (at most a quarter of it), within the router's cap", () => {
  expect(promptLimit(undefined, 4096, 180_000)).toBe(180_000);
  expect(promptLimit(32_768, 4096, 180_000)).toBe(28_672);
  expect(promptLimit(8192, 32_000, 180_000)).toBe(6144);
  expect(promptLimit(262_144, 4096, 180_000)).toBe(180_000);
});
