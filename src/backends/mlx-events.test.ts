import { expect, test } from "bun:test";
import type { Chunk } from "../core/events.ts";
import { MlxEvents, type MlxUsage } from "./mlx-events.ts";

async function* lines(...data: unknown[]): AsyncGenerator<string> {
  for (const d of data) yield `data: ${typeof d === "string" ? d : JSON.stringify(d)}`;
}

async function all(chunks: AsyncGenerator<Chunk>): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const c of chunks) out.push(c);
  return out;
}

const delta = (d: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

test("SSE deltas are events as they come; tool calls (gathered by index), usage and the end at [DONE]", async () => {
  const usages: MlxUsage[] = [];
  const parse = new MlxEvents("mlx:m", performance.now(), (u) => usages.push(u));
  const chunks = await all(
    parse.stream(
      lines(
        delta({ reasoning: "hm" }),
        delta({ content: "hi" }),
        delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "read", arguments: '{"pa' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: 'th":"a"}' } }] }, "tool_calls"),
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } } },
        "[DONE]",
      ),
    ),
  );
  expect(chunks.map((c) => c.model)).toEqual(["mlx:m", "mlx:m", "mlx:m", "mlx:m"]);
  expect(chunks.slice(0, 3).map((c) => c.events)).toEqual([
    [{ type: "thinking", text: "hm" }],
    [{ type: "text", text: "hi" }],
    [{ type: "tool_call", name: "read", arguments: { path: "a" }, id: "c1" }],
  ]);
  const [usage, done] = chunks[3]!.events;
  expect(usage).toMatchObject({ type: "usage", promptTokens: 5, completionTokens: 7 });
  expect(done).toEqual({ type: "done", reason: "stop" });
  expect(usages).toMatchObject([{ promptTokens: 5, completionTokens: 7, cachedTokens: 2 }]);
});

test("without [DONE] the stream just ends (the relay calls the answer incomplete); an error chunk is thrown", async () => {
  const parse = () => new MlxEvents("mlx:m", performance.now(), () => {});
  expect((await all(parse().stream(lines(delta({ content: "a" }))))).map((c) => c.events)).toEqual([[{ type: "text", text: "a" }]]);
  await expect(all(parse().stream(lines({ error: { message: "boom" } })))).rejects.toThrow("the MLX server failed mid-answer: boom");
});

test("a whole completion is one chunk that ends the answer; arguments that are not JSON stay text", () => {
  const chunk = new MlxEvents("mlx:m", performance.now(), () => {}).whole({
    choices: [{ message: { content: "ok", reasoning_content: "hm", tool_calls: [{ function: { name: "run", arguments: "not json" } }] }, finish_reason: "length" }],
    usage: { prompt_tokens: 1, completion_tokens: 2 },
  });
  expect(chunk.events.map((e) => e.type)).toEqual(["thinking", "text", "tool_call", "usage", "done"]);
  expect(chunk.events[2]).toEqual({ type: "tool_call", name: "run", arguments: "not json", id: undefined });
  expect(chunk.events[4]).toEqual({ type: "done", reason: "length" });
});
