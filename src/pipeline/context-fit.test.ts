import { expect, test } from "bun:test";
import type { Message } from "../core/conversation.ts";
import { promptTokens } from "../core/tokens.ts";
import { testConfig } from "../fleet/test-fixtures.ts";
import { fitContext } from "./context-fit.ts";
import { chatRequest } from "./test-fixtures.ts";

const file = (i: number) => `export const value${i} = ${i};\n`.repeat(200);
const history = (n: number, task = "fix the failing test"): Message[] => [
  { role: "user", content: task },
  ...Array.from({ length: n }, (_, i): Message[] => [{ role: "assistant", content: "", toolCalls: [{ name: "read", arguments: { path: `f${i}.ts` } }] }, { role: "tool", content: file(i) }]).flat(),
];
const trained = (contextLength: number | null) => ({ contextLength: async () => contextLength });
/** A summariser that must not be asked: these requests fit, or clearing tool results is all there is to try. */
const unasked = async () => {
  throw new Error("the summariser was asked");
};

async function request(n: number, replyTokens = 1000, task?: string) {
  const messages = history(n, task);
  return chatRequest({ model: "qwen2.5-coder:7b", messages, promptTokens: await promptTokens({ messages, tools: [] }), fitContext: { replyTokens }, session: { key: "prefix:1", cachedTokens: 99_999 } });
}

test("a request that does not ask, or fits, is left alone", async () => {
  const config = testConfig({});
  const plain = chatRequest({ promptTokens: 1_000_000 });
  expect(await fitContext(trained(8192), config, unasked, plain)).toBeNull();
  expect(plain.promptTokens).toBe(1_000_000);
  const fits = await request(2);
  const before = fits.promptTokens;
  expect(await fitContext(trained(32_768), config, unasked, fits)).toBeNull();
  expect([fits.promptTokens, fits.adjustments, fits.session?.cachedTokens]).toEqual([before, undefined, 99_999]);
});

test("old tool results are cleared to fit the model's context: the prompt's size, the trace's note and the session's cached share follow", async () => {
  const req = await request(8);
  const before = req.promptTokens;
  expect(await fitContext(trained(8192), testConfig({}), unasked, req)).toBeNull();
  expect(req.promptTokens).toBeLessThan(before);
  expect(req.promptTokens).toBeLessThanOrEqual(8192 - 1000);
  expect(req.adjustments).toEqual([expect.stringMatching(/^cleared the \d oldest tool result\(s\) \(\d+ → \d+ tokens\) to fit 7192$/)]);
  expect(req.session?.cachedTokens).toBeLessThan(99_999);
});

test("what still does not fit with every tool result cleared is a 413 naming the model's context, or the router's cap", async () => {
  // The task itself is over both: clearing tool results cannot make it fit.
  const task = file(99).repeat(4);
  const overModel = await fitContext(trained(2048), testConfig({}), unasked, await request(3, 1000, task));
  expect(overModel?.status).toBe(413);
  expect(overModel?.message).toMatch(/^prompt is too long: about \d+ tokens, over what qwen2.5-coder:7b can take \(2048-token context, less room for the reply\); no summary of the turns before the last user message could make it fit\. Run \/compact in Claude Code/);
  const overCap = await fitContext(trained(null), testConfig({ anthropic: { maxPromptTokens: 1000 } }), unasked, await request(3, 1000, task));
  expect(overCap?.message).toMatch(/over this router's limit of 1000 \(anthropic.maxPromptTokens\)/);
});

test("still too long with the tool results cleared: the oldest turns are summarised by anthropic.summaryModel, given at most half its context, and the trace's notes say both", async () => {
  const old = (i: number) => `turn ${i}: ${file(i)}`;
  const messages: Message[] = [
    ...history(2),
    ...[1, 2, 3].flatMap((i): Message[] => [{ role: "user", content: old(i) }, { role: "assistant", content: old(i + 10) }]),
    { role: "user", content: "what next?" },
  ];
  const req = chatRequest({ model: "qwen2.5-coder:7b", messages, promptTokens: await promptTokens({ messages, tools: [] }), fitContext: { replyTokens: 1000 } });
  const contexts: Record<string, number> = { "qwen2.5-coder:7b": 32_768, "small:1b": 4096 };
  const asked: { model: string; text: string }[] = [];
  const summarise = async ({ model, text }: { model: string; text: string }) => (asked.push({ model, text }), "the gist");
  const config = testConfig({ anthropic: { maxPromptTokens: 3000, summaryModel: "small:1b" } });
  expect(await fitContext({ contextLength: async (m) => contexts[m] ?? null }, config, summarise, req)).toBeNull();
  expect(asked.map((a) => a.model)).toEqual(["small:1b"]);
  expect(asked[0]!.text.length).toBeLessThanOrEqual(2048 * 3 + 100);
  expect(req.adjustments).toEqual([expect.stringMatching(/^cleared 2 of the 2 newest/), expect.stringMatching(/^summarised the \d+ oldest messages with small:1b \(\d+ → \d+ tokens\) to fit 3000$/)]);
  expect(req.promptTokens).toBeLessThanOrEqual(3000);
  expect(req.messages!.at(-1)).toEqual({ role: "user", content: "what next?" });
});
