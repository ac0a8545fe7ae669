import { expect, test } from "bun:test";
import { chatRequest } from "./test-fixtures.ts";
import { decideThink } from "./thinking.ts";

const facts = (thinks: boolean) => ({ canThink: async () => thinks });

test("Anthropic's enabled or disabled goes only to a model that can think", async () => {
  for (const [ask, thinks, think] of [[true, true, true], [false, true, false], [true, false, undefined], [false, false, undefined]] as const) {
    const req = chatRequest({ model: "qwen3:8b", thinkAsk: { think: ask } });
    await decideThink(facts(thinks), req);
    expect(req.think).toBe(think);
  }
});

test("a reasoning effort is decided by the model the request resolved to, and nothing asked leaves think alone", async () => {
  const onGptOss = chatRequest({ model: "gpt-oss:20b", thinkAsk: { effort: "low" } });
  await decideThink(facts(false), onGptOss);
  expect(onGptOss.think).toBe("low");
  const onLlama = chatRequest({ model: "llama3.2:3b", thinkAsk: { effort: "high" } });
  await decideThink(facts(false), onLlama);
  expect(onLlama.think).toBeUndefined();
  const none = chatRequest({ model: "qwen3:8b" });
  await decideThink(facts(true), none);
  expect(none.think).toBeUndefined();
});
