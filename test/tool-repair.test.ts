// Tool-call repair through the router: a node whose model botches its tool
// calls (the simulator's botchedToolCalls fault) still gives agents real calls,
// in every surface, and /fleet/queue counts the repairs per model.
import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const weather = { name: "get_weather", description: "weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };

async function fleet() {
  const sim = await startSimOllama({ id: "n", models: ["qwen3:8b"], loaded: ["qwen3:8b"], faults: { botchedToolCalls: true } });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "n", ollama: "${sim.url}" }] };\n`);
  const r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${r.url}/api/ps`)).models.length === 1, 3000, "the node");
  return { url: r.url, sim };
}

describe("tool-call repair", () => {
  test("the node really botches the call: straight to it, the call arrives as text", async () => {
    const { sim } = await fleet();
    const reply = await new Ollama({ host: sim.url }).chat({ model: "qwen3:8b", think: false, messages: [{ role: "user", content: "sim: call get_weather" }], tools: [{ type: "function", function: weather }] });
    expect(reply.message.tool_calls ?? []).toEqual([]);
    expect(reply.message.content).toContain("<tool_call>");
    await sim.stop();
  });

  test("through herd it is a real call: Ollama (streamed), OpenAI and Anthropic; the repairs are counted", async () => {
    const { url, sim } = await fleet();
    const ollama = new Ollama({ host: url });
    const calls: unknown[] = [];
    let text = "";
    for await (const part of await ollama.chat({ model: "qwen3:8b", think: false, stream: true, messages: [{ role: "user", content: "sim: call get_weather" }], tools: [{ type: "function", function: weather }] })) {
      calls.push(...(part.message.tool_calls ?? []));
      text += part.message.content;
    }
    expect(calls).toEqual([{ function: { name: "get_weather", arguments: { city: expect.any(String) } } }]);
    expect(text).toBe("");

    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x" });
    const completion = await openai.chat.completions.create({ model: "qwen3:8b", messages: [{ role: "user", content: "sim: call get_weather" }], tools: [{ type: "function", function: weather }] });
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");

    const anthropic = new Anthropic({ baseURL: url, apiKey: "x", maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: "qwen3:8b",
      max_tokens: 256,
      thinking: { type: "disabled" },
      tools: [{ name: weather.name, description: weather.description, input_schema: weather.parameters as Anthropic.Tool.InputSchema }],
      messages: [{ role: "user", content: "sim: call get_weather" }],
    });
    expect(message.stop_reason).toBe("tool_use");

    const queue = await getJson(`${url}/fleet/queue`);
    expect(queue.queues["n:qwen3:8b"].tool_repair).toEqual({ attempts: 3, successes: 3, failures: 0 });
    await sim.stop();
  });

  test("an ordinary answer with tools on offer goes out unchanged and is not counted", async () => {
    const { url, sim } = await fleet();
    const direct = await new Ollama({ host: sim.url }).chat({ model: "qwen3:8b", think: false, messages: [{ role: "user", content: "hello there" }], tools: [{ type: "function", function: weather }] });
    const routed = await new Ollama({ host: url }).chat({ model: "qwen3:8b", think: false, messages: [{ role: "user", content: "hello there" }], tools: [{ type: "function", function: weather }] });
    expect(routed.message.content).toBe(direct.message.content);
    expect(routed.message.content.length).toBeGreaterThan(0);
    expect((await getJson(`${url}/fleet/queue`)).queues["n:qwen3:8b"].tool_repair).toBeUndefined();
    await sim.stop();
  });
});
