// The Anthropic Messages API through a real router process to simulated
// nodes, with the official @anthropic-ai/sdk and with raw HTTP where the bytes
// matter: messages, SSE event order, tools, thinking, count_tokens, claude-*
// resolution, errors, and a turn shaped like Claude Code's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { countTokens as bpeCount } from "gpt-tokenizer/encoding/cl100k_base";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { StopScanner } from "../src/surfaces/anthropic-codec.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

async function fleet(node: SimNodeOptions, extra = "") {
  const sim = await startSimOllama(node);
  sims.push(sim);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "${node.id}", ollama: "${sim.url}" }], ${extra} };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "the node online");
  return { url: router.url, sim };
}

const MODELS = ["llama3.2:1b", "llama3.2:3b", "qwen2.5-coder:7b", "qwen3:8b", "gemma3:4b"];
let url: string;
let sim: SimNode;
let client: Anthropic;
beforeAll(async () => {
  // Pings every 400 ms (a quarter of idleMs), so a slow node shows them quickly.
  ({ url, sim } = await fleet({ id: "studio", models: MODELS, loaded: MODELS }, `timeouts: { idleMs: 1600 }, modelMap: { "house-model": "llama3.2:3b" }`));
  client = new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 });
});

const user = (content: Anthropic.MessageParam["content"]): Anthropic.MessageParam => ({ role: "user", content });
const textOf = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

/** An SSE body as (event name, parsed data) pairs; each data's type must match its event line. */
function parseSse(raw: string): { event: string; data: any }[] {
  expect(raw.endsWith("\n\n")).toBe(true);
  return raw
    .slice(0, -2)
    .split("\n\n")
    .map((chunk) => {
      const m = /^event: ([a-z_]+)\ndata: (.+)$/.exec(chunk);
      if (!m) throw new Error(`not an Anthropic SSE event: ${JSON.stringify(chunk)}`);
      const data = JSON.parse(m[2]!);
      expect(data.type).toBe(m[1]!);
      return { event: m[1]!, data };
    });
}

const WEATHER: Anthropic.Tool = {
  name: "get_weather",
  description: "Get the current weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

describe("messages.create", () => {
  test("a text answer: Message shape, end_turn, usage, X-Fleet-* headers, anthropic-version echoed", async () => {
    const versioned = new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "anthropic-version": "2026-01-15", "anthropic-beta": "interleaved-thinking-2025-05-14" } });
    const { data, response } = await versioned.messages
      .create({ model: "llama3.2:3b", max_tokens: 200, system: "You are terse.", messages: [user("Tell me about caching")] })
      .withResponse();
    expect(data.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(data).toMatchObject({ type: "message", role: "assistant", model: "llama3.2:3b", stop_reason: "end_turn", stop_sequence: null });
    expect(data.content).toHaveLength(1);
    expect(data.content[0]!.type).toBe("text");
    expect(textOf(data)).toContain("caching");
    expect(data.usage.input_tokens).toBeGreaterThan(0);
    expect(data.usage.output_tokens).toBeGreaterThan(3);
    expect(response.headers.get("anthropic-version")).toBe("2026-01-15");
    expect(response.headers.get("x-fleet-node")).toBe("studio");
    expect(response.headers.get("x-fleet-served-model")).toBe("llama3.2:3b");
    expect(Number(response.headers.get("x-fleet-score"))).toBeGreaterThan(0);
  });

  test("system as text blocks (with cache_control) reaches the model exactly as the same string does", async () => {
    const ask = (system: Anthropic.MessageCreateParams["system"]) =>
      client.messages.create({ model: "llama3.2:3b", max_tokens: 200, system, messages: [user("What about batching")] }).then(textOf);
    const asBlocks = await ask([{ type: "text", text: "Be brief." }, { type: "text", text: "Use plain words.", cache_control: { type: "ephemeral" } }]);
    expect(await ask("Be brief.\nUse plain words.")).toBe(asBlocks);
    expect(await ask("Something else entirely.")).not.toBe(asBlocks);
  });

  test("multi-turn content blocks, and max_tokens ending the answer with stop_reason max_tokens", async () => {
    const m = await client.messages.create({
      model: "llama3.2:3b",
      max_tokens: 3,
      messages: [
        user([{ type: "text", text: "Hello" }, { type: "text", text: "there" }]),
        { role: "assistant", content: [{ type: "text", text: "Hi! How can I help?" }] },
        user([{ type: "text", text: "Explain latency" }]),
      ],
    });
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.usage.output_tokens).toBe(3);
  });

  test("stop_sequences: the answer is cut before the sequence and ends with stop_reason stop_sequence", async () => {
    const question = { model: "llama3.2:3b", max_tokens: 200, messages: [user("Tell me about queues")] };
    const whole = textOf(await client.messages.create(question));
    const words = whole.split(" ");
    const stop = ` ${words[Math.floor(words.length / 2)]}`;
    const cut = await client.messages.create({ ...question, stop_sequences: ["NEVER-SEEN", stop] });
    expect(cut.stop_reason).toBe("stop_sequence");
    expect(cut.stop_sequence).toBe(stop);
    expect(textOf(cut)).toBe(whole.slice(0, whole.indexOf(stop)));
    // Streamed, the deltas hold back a possible start of the sequence and never send past it.
    const stream = client.messages.stream({ ...question, stop_sequences: [stop] });
    let streamed = "";
    stream.on("text", (t) => (streamed += t));
    const final = await stream.finalMessage();
    expect(streamed).toBe(textOf(cut));
    expect(final).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: stop });
  });

  test("images: base64 sources go to a vision model; URL sources are refused", async () => {
    const image: Anthropic.ImageBlockParam = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } };
    const { data, response } = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 50, messages: [user([image, { type: "text", text: "What is this" }])] }).withResponse();
    expect(response.headers.get("x-fleet-served-model")).toBe("gemma3:4b");
    expect(data.stop_reason).toBe("end_turn");
    const remote = await client.messages
      .create({ model: "llama3.2:3b", max_tokens: 50, messages: [user([{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }])] })
      .catch((e) => e);
    expect(remote).toBeInstanceOf(Anthropic.BadRequestError);
    expect(remote.message).toContain("messages[0].content[0].source");
  });
});

describe("documents", () => {
  test("a text document (plain or content blocks) reaches the model as text, also inside a tool_result; a PDF is refused by name", async () => {
    const plain: Anthropic.DocumentBlockParam = { type: "document", title: "Quarterly numbers", source: { type: "text", media_type: "text/plain", data: "Revenue grew" } };
    const blocks: Anthropic.DocumentBlockParam = { type: "document", source: { type: "content", content: [{ type: "text", text: "Harbour schedule" }] } };
    for (const [doc, words] of [[plain, "Quarterly numbers Revenue grew"], [blocks, "Harbour schedule"]] as const) {
      const m = await client.messages.create({ model: "llama3.2:3b", max_tokens: 100, messages: [user([doc, { type: "text", text: "summarise" }])] });
      expect(textOf(m)).toContain(words); // the sim's answer names the start of the user's text
    }
    const asResult = await post("/v1/messages", {
      model: "llama3.2:3b",
      max_tokens: 50,
      messages: [user("read it"), { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }] }, user([{ type: "tool_result", tool_use_id: "toolu_1", content: [plain] }])],
    });
    expect(asResult.status).toBe(200);
    const pdf = await client.messages
      .create({ model: "llama3.2:3b", max_tokens: 50, messages: [user([{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } }])] })
      .catch((e) => e);
    expect(pdf).toBeInstanceOf(Anthropic.BadRequestError);
    expect(pdf.error.error.message).toBe('messages[0].content[0].source: herd\'s local models read text documents only (source type "text" or "content"), not "base64" (application/pdf)');
  });
});

describe("messages.stream", () => {
  test("the exact SSE sequence, byte for byte, and the SDK's view of it", async () => {
    const res = await post("/v1/messages", { model: "llama3.2:1b", max_tokens: 100, stream: true, messages: [{ role: "user", content: "Tell me about memory" }] });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const events = parseSse(await res.text());
    const names = events.map((e) => e.event);
    const deltas = names.filter((n) => n === "content_block_delta").length;
    expect(deltas).toBeGreaterThan(3);
    expect(names).toEqual(["message_start", "content_block_start", ...Array(deltas).fill("content_block_delta"), "content_block_stop", "message_delta", "message_stop"]);
    const [start, blockStart] = events;
    expect(start!.data.message).toMatchObject({ type: "message", role: "assistant", model: "llama3.2:1b", content: [], stop_reason: null, stop_sequence: null });
    expect(start!.data.message.id).toMatch(/^msg_/);
    expect(start!.data.message.usage.input_tokens).toBeGreaterThan(0);
    expect(blockStart!.data).toEqual({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
    for (const e of events.filter((e) => e.event === "content_block_delta")) expect(e.data).toMatchObject({ index: 0, delta: { type: "text_delta" } });
    expect(events.at(-3)!.data).toEqual({ type: "content_block_stop", index: 0 });
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: "end_turn", stop_sequence: null } });
    expect(events.at(-2)!.data.usage.output_tokens).toBe(deltas);

    // The SDK sees the same sequence and assembles the same text.
    const stream = client.messages.stream({ model: "llama3.2:1b", max_tokens: 100, messages: [user("Tell me about memory")] });
    const seen: string[] = [];
    stream.on("streamEvent", (e) => seen.push(e.type));
    const final = await stream.finalMessage();
    expect(seen).toEqual(names);
    expect(textOf(final)).toBe(events.filter((e) => e.event === "content_block_delta").map((e) => e.data.delta.text).join(""));
  });

  test("ping events while the node is silent; the SDK ignores them", async () => {
    sim.setFaults({ tokenDelayMs: 600 });
    try {
      const res = await post("/v1/messages", { model: "llama3.2:1b", max_tokens: 3, stream: true, messages: [{ role: "user", content: "hi" }] });
      const names = parseSse(await res.text()).map((e) => e.event);
      expect(names.filter((n) => n === "ping").length).toBeGreaterThanOrEqual(2);
      expect(names.filter((n) => n !== "ping")).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
      expect(names.indexOf("ping")).toBeGreaterThan(names.indexOf("content_block_start"));
    } finally {
      sim.setFaults({});
    }
  });

  test("a node dying mid-stream ends the stream with an error event; the SDK throws", async () => {
    sim.setFaults({ dieAfterTokens: 3 });
    try {
      const res = await post("/v1/messages", { model: "llama3.2:1b", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] });
      const events = parseSse(await res.text());
      expect(events.at(-1)!.event).toBe("error");
      expect(events.at(-1)!.data.error.type).toBe("api_error");
      expect(events.map((e) => e.event)).not.toContain("message_stop");
      const stream = client.messages.stream({ model: "llama3.2:1b", max_tokens: 100, messages: [user("hi")] });
      expect(await stream.finalMessage().catch((e) => e)).toBeInstanceOf(Anthropic.APIError);
    } finally {
      sim.setFaults({});
    }
  });
});

describe("tools and thinking", () => {
  test("a tool-use round trip: tool_use with parsed input, then tool_result (string, blocks, is_error) to end_turn", async () => {
    const ask: Anthropic.MessageParam = user("What is the weather in Paris?\nsim: call get_weather");
    const first = await client.messages.create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools: [WEATHER], tool_choice: { type: "auto" }, messages: [ask] });
    expect(first.stop_reason).toBe("tool_use");
    const call = first.content.find((b) => b.type === "tool_use");
    if (call?.type !== "tool_use") throw new Error("no tool_use block");
    expect(call.id).toMatch(/^toolu_[0-9a-f]{24}$/);
    expect(call).toMatchObject({ name: "get_weather", input: { city: "example city" } });

    const results: Anthropic.ToolResultBlockParam[] = [
      { type: "tool_result", tool_use_id: call.id, content: "18C, sunny" },
      { type: "tool_result", tool_use_id: call.id, content: [{ type: "text", text: "18C" }, { type: "text", text: "sunny" }] },
      { type: "tool_result", tool_use_id: call.id, content: "city not found", is_error: true },
    ];
    const answers = await Promise.all(
      results.map((result) =>
        client.messages.create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools: [WEATHER], messages: [ask, { role: "assistant", content: first.content }, user([result])] }),
      ),
    );
    for (const a of answers) {
      expect(a.stop_reason).toBe("end_turn");
      expect(a.content.map((b) => b.type)).toEqual(["text"]);
    }
    // The error flag reaches the model (as text), so its answer differs from the plain result's.
    expect(textOf(answers[2]!)).not.toBe(textOf(answers[0]!));
  });

  test("tool_choice none sends no tools; tool_choice tool must name one of them", async () => {
    const ask = user("sim: call get_weather");
    const none = await client.messages.create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools: [WEATHER], tool_choice: { type: "none" }, messages: [ask] });
    expect(none.stop_reason).toBe("end_turn");
    const forced = await client.messages.create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools: [WEATHER], tool_choice: { type: "tool", name: "get_weather" }, messages: [ask] });
    expect(forced.stop_reason).toBe("tool_use");
    const wrong = await client.messages
      .create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools: [WEATHER], tool_choice: { type: "tool", name: "nope" }, messages: [ask] })
      .catch((e) => e);
    expect(wrong).toBeInstanceOf(Anthropic.BadRequestError);
    expect(wrong.error.error).toMatchObject({ type: "invalid_request_error", message: expect.stringContaining("tool_choice.name") });
  });

  test("a thinking model's reasoning comes back as thinking blocks, before the text", async () => {
    const params: Anthropic.MessageCreateParamsNonStreaming = { model: "qwen3:8b", max_tokens: 2000, thinking: { type: "enabled", budget_tokens: 1024 }, messages: [user("Tell me about routing")] };
    const m = await client.messages.create(params);
    expect(m.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    const thinking = m.content[0]!;
    if (thinking.type !== "thinking") throw new Error("no thinking block");
    expect(thinking.thinking).toContain("routing");
    expect(m.stop_reason).toBe("end_turn");

    const res = await post("/v1/messages", { ...params, stream: true });
    const events = parseSse(await res.text());
    const kinds = events.filter((e) => e.event === "content_block_start").map((e) => e.data.content_block);
    expect(kinds).toEqual([{ type: "thinking", thinking: "", signature: "" }, { type: "text", text: "" }]);
    const deltas = events.filter((e) => e.event === "content_block_delta");
    const reasoning = deltas.filter((e) => e.data.index === 0).map((e) => e.data.delta);
    // As Anthropic streams a thinking block: thinking_delta events, then its signature just before content_block_stop.
    expect(reasoning.map((d) => d.type)).toEqual([...Array(reasoning.length - 1).fill("thinking_delta"), "signature_delta"]);
    expect(events[events.findIndex((e) => e.data.delta?.type === "signature_delta") + 1]!.data).toEqual({ type: "content_block_stop", index: 0 });
    expect(reasoning.at(-1).signature).toBe(thinking.signature);
    expect(thinking.signature.length).toBeGreaterThan(10);
    expect(deltas.filter((e) => e.data.index === 1).every((e) => e.data.delta.type === "text_delta")).toBe(true);
    expect(reasoning.slice(0, -1).map((d) => d.thinking).join("")).toBe(thinking.thinking);

    // thinking disabled: the model is told not to think.
    const plain = await client.messages.create({ ...params, thinking: { type: "disabled" } });
    expect(plain.content.map((b) => b.type)).toEqual(["text"]);
  });
});

/** What the node itself answers for these Ollama messages: a simulated model's answer depends on nothing else. */
async function nodeAnswer(model: string, messages: { role: string; content: string }[]): Promise<string> {
  const res = await fetch(`${sim.url}/api/chat`, { method: "POST", body: JSON.stringify({ model, messages, stream: false, options: { num_predict: 200 } }) });
  return ((await res.json()) as any).message.content;
}

async function refusal(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; type: string; message: string }> {
  const res = await post("/v1/messages", body, headers);
  const error = (await res.json()) as any;
  expect(error.type).toBe("error");
  return { status: res.status, type: error.error.type, message: error.error.message };
}

describe("mid-conversation system messages", () => {
  test("accepted where Anthropic places them, and seen by the model as system messages at their place", async () => {
    const res = await post("/v1/messages", {
      model: "llama3.2:3b",
      max_tokens: 200,
      messages: [
        { role: "user", content: "Tell me about queues" },
        { role: "system", content: [{ type: "text", text: "Answer in one line.", cache_control: { type: "ephemeral" } }], output_config: { effort: "low" } },
        { role: "assistant", content: "Queues hold work." },
        { role: "user", content: "And batching?" },
        { role: "system", content: "Be brief." },
      ],
    });
    expect(res.status).toBe(200);
    const text = ((await res.json()) as any).content[0].text;
    const turns = [
      { role: "user", content: "Tell me about queues" },
      { role: "assistant", content: "Queues hold work." },
      { role: "user", content: "And batching?" },
    ];
    expect(text).toBe(await nodeAnswer("llama3.2:3b", [turns[0]!, { role: "system", content: "Answer in one line." }, turns[1]!, turns[2]!, { role: "system", content: "Be brief." }]));
    expect(text).not.toBe(await nodeAnswer("llama3.2:3b", turns));

    // One with no text only sets options (an effort-only message, as the AI SDK sends it), and may come first.
    const effortOnly = await post("/v1/messages", { model: "llama3.2:3b", max_tokens: 20, messages: [{ role: "system", content: [], output_config: { effort: "low" } }, { role: "user", content: "hi" }] });
    expect(effortOnly.status).toBe(200);
    await effortOnly.json();
  });

  test("refused where Anthropic refuses them: first, after an assistant or another system message, content not text", async () => {
    const hi = { role: "user", content: "hi" };
    for (const [messages, field, why] of [
      [[{ role: "system", content: "x" }, hi], "messages[0].role:", "cannot be the first message"],
      [[hi, { role: "assistant", content: "hello" }, { role: "system", content: "x" }], "messages[2].role:", 'must directly follow a user message, not a message with role "assistant"'],
      [[hi, { role: "system", content: "x" }, { role: "system", content: "y" }], "messages[2].role:", "not another system message"],
      [[hi, { role: "system", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }], "messages[1].content:", "a list of text blocks"],
      [[hi, { role: "system", content: 5 }], "messages[1].content:", "a list of text blocks"],
      [[hi, { role: "system" }], "messages[1].content:", "a list of text blocks"],
      [[hi, { role: "developer", content: "x" }], "messages[1].role:", '"user", "assistant" or "system"'],
    ] as const) {
      const error = await refusal({ model: "llama3.2:3b", max_tokens: 20, messages });
      expect(error).toMatchObject({ status: 400, type: "invalid_request_error" });
      expect(error.message).toStartWith(field);
      expect(error.message).toContain(why);
    }
  });
});

describe("thinking by the model's capabilities", () => {
  const blocks = async (model: string, thinking: unknown) => {
    const res = await post("/v1/messages", { model, max_tokens: 500, thinking, messages: [{ role: "user", content: "Tell me about routing" }] });
    const body = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${model} with thinking ${JSON.stringify(thinking)}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body.content.map((b: any) => b.type);
  };

  test("adaptive sends no think; enabled and disabled set it only where /api/show lists the thinking capability", async () => {
    // llama3.2:3b cannot think: Ollama refuses think:true there, so it is never sent.
    for (const thinking of [{ type: "adaptive" }, { type: "enabled", budget_tokens: 1024 }, { type: "disabled" }]) expect(await blocks("llama3.2:3b", thinking)).toEqual(["text"]);
    // qwen3:8b can: adaptive leaves it to the model (which thinks by default), enabled asks, disabled tells it not to.
    expect(await blocks("qwen3:8b", { type: "adaptive" })).toEqual(["thinking", "text"]);
    expect(await blocks("qwen3:8b", undefined)).toEqual(["text"]); // no thinking asked for: none, as the API does
    expect(await blocks("qwen3:8b", { type: "enabled", budget_tokens: 1024 })).toEqual(["thinking", "text"]);
    expect(await blocks("qwen3:8b", { type: "disabled" })).toEqual(["text"]);
    // A display mode herd does not know shows the thinking; a bad type is refused.
    expect(await blocks("qwen3:8b", { type: "adaptive", display: "some-future-mode" })).toEqual(["thinking", "text"]);
    expect((await refusal({ model: "qwen3:8b", max_tokens: 20, thinking: { type: "sometimes" }, messages: [{ role: "user", content: "hi" }] })).message).toStartWith("thinking.type:");
  });

  test("display omitted: thinking blocks without their text but with a signature, which carries the reasoning into the next turn", async () => {
    const params = { model: "qwen3:8b", max_tokens: 500, thinking: { type: "adaptive", display: "omitted" }, messages: [{ role: "user", content: "Tell me about routing" }] };
    const events = parseSse(await (await post("/v1/messages", { ...params, stream: true })).text());
    const thinkingBlock = events.filter((e) => e.data.index === 0).map((e) => e.data);
    expect(thinkingBlock.map((e) => e.delta?.type ?? e.type)).toEqual(["content_block_start", "signature_delta", "content_block_stop"]);
    expect(thinkingBlock[0].content_block).toEqual({ type: "thinking", thinking: "", signature: "" });
    const message = (await (await post("/v1/messages", params)).json()) as any;
    expect(message.content[0]).toEqual({ type: "thinking", thinking: "", signature: thinkingBlock[1].delta.signature });

    // Passed back without its text, the block still gives the model its reasoning: the prompt is longer for it.
    const nextTurn = (signature: string) =>
      client.messages.countTokens({
        model: "qwen3:8b",
        messages: [user("Tell me about routing"), { role: "assistant", content: [{ type: "thinking", thinking: "", signature }, { type: "text", text: "Routes." }] }, user("More")],
      });
    expect((await nextTurn(message.content[0].signature)).input_tokens).toBeGreaterThan((await nextTurn("EqQBCkgIARABGAIiQL")).input_tokens + 5);
  });
});

describe("tool search: deferred tools and tool_reference", () => {
  const SEARCH: Anthropic.Tool = { name: "ToolSearch", description: "Load deferred tools", input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } };
  const LOOKUP: Anthropic.Tool = { name: "lookup_order", description: "Look an order up", input_schema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] }, defer_loading: true };
  const PLACEHOLDER: Anthropic.Tool = { name: "DeferredToolPlaceholder", description: "Never call this tool.", input_schema: { type: "object", properties: {} }, defer_loading: true };
  const tools = [SEARCH, WEATHER, LOOKUP, PLACEHOLDER];
  const ask = (tools: Anthropic.Tool[], messages: Anthropic.MessageParam[]) => client.messages.create({ model: "qwen2.5-coder:7b", max_tokens: 300, tools, messages });

  test("a deferred tool reaches the model only once a tool_result's tool_reference loads it; the placeholder never does", async () => {
    expect(textOf(await ask(tools, [user("sim: call lookup_order")]))).toBe("The tool lookup_order is not among the tools offered (ToolSearch, get_weather).");

    const loadThen = async (next: string) => {
      const prompt = user(`sim: call ToolSearch {"query":"select:lookup_order"}\nsim: call ${next}`);
      const search = await ask(tools, [prompt]);
      const call = search.content.find((b) => b.type === "tool_use");
      if (call?.type !== "tool_use") throw new Error(`no ToolSearch call: ${JSON.stringify(search.content)}`);
      const result: Anthropic.ToolResultBlockParam = { type: "tool_result", tool_use_id: call.id, content: [{ type: "tool_reference", tool_name: "lookup_order", cache_control: { type: "ephemeral" } }] };
      return ask(tools, [prompt, { role: "assistant", content: search.content }, user([result, { type: "text", text: "Tool loaded." }])]);
    };
    const called = await loadThen('lookup_order {"id":"A-1"}');
    expect(called.stop_reason).toBe("tool_use");
    expect(called.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "lookup_order", input: { id: "A-1" } });
    expect(textOf(await loadThen("DeferredToolPlaceholder"))).toBe("The tool DeferredToolPlaceholder is not among the tools offered (ToolSearch, get_weather, lookup_order).");
  });

  test("a tool_reference needs a tool_name", async () => {
    const error = await refusal({
      model: "qwen2.5-coder:7b",
      max_tokens: 20,
      tools,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "ToolSearch", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "tool_reference" }] }] },
      ],
    });
    expect(error).toMatchObject({ status: 400, message: expect.stringMatching(/^messages\[2\]\.content\[0\]\.content\[0\]\.tool_name:/) });
  });
});

describe("structured output", () => {
  const schema = { type: "object", properties: { city: { type: "string" }, temperature: { type: "number" } }, required: ["city", "temperature"], additionalProperties: false };

  test("output_config.format and the older output_format reach the node as Ollama's format: the answer is JSON of that schema", async () => {
    for (const field of [{ output_config: { effort: "low", format: { type: "json_schema", schema } } }, { output_format: { type: "json_schema", schema } }]) {
      const res = await post("/v1/messages", { model: "llama3.2:3b", max_tokens: 200, messages: [{ role: "user", content: "The weather in Paris" }], ...field });
      const answer = JSON.parse(((await res.json()) as any).content[0].text);
      expect(Object.keys(answer).sort()).toEqual(["city", "temperature"]);
      expect(typeof answer.temperature).toBe("number");
    }
    for (const [field, name] of [
      [{ output_config: { format: { type: "json", schema } } }, "output_config.format:"],
      [{ output_config: { format: { type: "json_schema" } } }, "output_config.format:"],
      [{ output_format: { type: "json_schema", schema: "{}" } }, "output_format:"],
      [{ output_config: "high" }, "output_config:"],
    ] as const) {
      expect((await refusal({ model: "llama3.2:3b", max_tokens: 20, messages: [{ role: "user", content: "x" }], ...field })).message).toStartWith(name);
    }
  });
});

describe("usage and strict mode", () => {
  test("input_tokens: one count in message_start, message_delta, the whole Message and count_tokens", async () => {
    const params = { model: "qwen3:8b", max_tokens: 300, system: "Be brief.", tools: [WEATHER], messages: [user("Tell me about caching")] };
    const { max_tokens: _, ...countable } = params;
    const counted = (await client.messages.countTokens(countable)).input_tokens;
    const events = parseSse(await (await post("/v1/messages", { ...params, stream: true })).text());
    expect(events[0]!.data.message.usage.input_tokens).toBe(counted);
    expect(events.find((e) => e.event === "message_delta")!.data.usage).toMatchObject({ input_tokens: counted, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect((await client.messages.create(params)).usage.input_tokens).toBe(counted);
  });

  test("strict (X-Fleet-No-Fallback, fallback: false): the exact model or an operator's modelMap entry, else 404 not_found_error", async () => {
    const strict = { "X-Fleet-No-Fallback": "true" };
    const hi = (model: string, extra = {}) => ({ model, max_tokens: 20, messages: [{ role: "user", content: "hi" }], ...extra });
    for (const [body, headers] of [
      [hi("does-not-exist:1b"), strict],
      [hi("claude-sonnet-4-5"), strict],
      [hi("does-not-exist:1b", { fallback: false }), {}],
      [hi("does-not-exist:1b", { fallback_models: ["llama3.2:3b"] }), strict],
    ] as const) {
      const error = await refusal(body, headers);
      expect(error).toMatchObject({ status: 404, type: "not_found_error" });
      expect(error.message).toContain(body.model);
    }
    // Not strict, the same ids are auto-routed.
    expect((await post("/v1/messages", hi("does-not-exist:1b"))).headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b");
    for (const [model, served] of [["llama3.2:3b", "llama3.2:3b"], ["house-model", "llama3.2:3b"]]) {
      const res = await post("/v1/messages", hi(model!), strict);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-fleet-served-model")).toBe(served!);
      await res.json();
    }
  });
});

describe("count_tokens, resolution, errors", () => {
  test("countTokens counts with a real BPE tokenizer, tools included", async () => {
    const base = await client.messages.countTokens({ model: "claude-sonnet-4-5", messages: [user("x")] });
    const text = "Tokenization of antidisestablishmentarianism, naïve café prose, and `const x = await fetch(url);` — 42 times.";
    const longer = await client.messages.countTokens({ model: "claude-sonnet-4-5", messages: [user(`x${text}`)] });
    expect(longer.input_tokens - base.input_tokens).toBe(bpeCount(`x${text}`) - bpeCount("x"));
    expect(longer.input_tokens - base.input_tokens).not.toBe(Math.ceil(text.length / 4));
    const withTools = await client.messages.countTokens({ model: "claude-sonnet-4-5", messages: [user("x")], tools: [WEATHER] });
    expect(withTools.input_tokens).toBeGreaterThan(base.input_tokens + 20);
  });

  test("counting megabyte prompts does not hold up other requests: four 15 MB counts at once, and /healthz answers before them", async () => {
    // Words the tokenizer has not met before lead, so each count takes it most of a second on any machine (repeated text
    // alone is counted in a fifth of one, and a count could then beat /healthz's request to the router).
    const unmet = Array.from({ length: 150_000 }, (_, i) => `q${((i * 2654435761) >>> 0).toString(36)}`).join(" ");
    const big = unmet + " lorem ipsum dolor sit amet, consectetur adipiscing elit.".repeat((15 * 1024 * 1024 - unmet.length) / 57);
    const order: string[] = [];
    const counts = Array.from({ length: 4 }, () => post("/v1/messages/count_tokens", { model: "claude-sonnet-4-5", messages: [{ role: "user", content: big }] }).then(async (r) => {
      order.push("count");
      return r.json() as Promise<any>;
    }));
    // Once the bodies are in: the counts run while the router answers what else comes.
    await Bun.sleep(300);
    const health = fetch(`${url}/healthz`).then((r) => {
      order.push("healthz");
      return r.status;
    });
    expect(await health).toBe(200);
    const answered = await Promise.all(counts);
    expect(answered.every((a) => a.input_tokens > 1_000_000)).toBe(true);
    expect(order[0]).toBe("healthz");
  }, 60_000);

  test("claude-* ids resolve by tier: haiku to the smallest loaded chat model, sonnet to a coder; the trace says why", async () => {
    const ask = (model: string) => client.messages.create({ model, max_tokens: 20, metadata: { user_id: "alice" }, messages: [user("hi")] }).withResponse();
    const haiku = await ask("claude-haiku-4-5");
    expect(haiku.response.headers.get("x-fleet-served-model")).toBe("llama3.2:1b");
    expect(haiku.response.headers.get("x-fleet-requested-model")).toBe("claude-haiku-4-5");
    expect(haiku.data.model).toBe("claude-haiku-4-5");
    const sonnet = await ask("claude-sonnet-4-5-20250929");
    expect(sonnet.response.headers.get("x-fleet-served-model")).toBe("qwen2.5-coder:7b");
    const traces = await eventually(async () => {
      const all = (await getJson(`${url}/dashboard/api/traces?limit=50`)).traces as any[];
      const mine = all.filter((t) => t.original_format === "anthropic" && t.tags.includes("user:alice"));
      return mine.length >= 2 && mine;
    }, 3000, "the two traces");
    expect(traces.map((t) => t.resolution).sort()).toEqual([
      `"claude-haiku-4-5": auto-routed (small tier) to the best loaded model`,
      `"claude-sonnet-4-5-20250929": auto-routed (coding tier) to the best loaded model`,
    ]);
  });

  test("errors in Anthropic's shape: 400 naming the field", async () => {
    for (const [body, field] of [
      [{ model: "llama3.2:3b", max_tokens: 10 }, "messages:"],
      [{ model: "llama3.2:3b", max_tokens: 0, messages: [{ role: "user", content: "x" }] }, "max_tokens:"],
      [{ model: "llama3.2:3b", messages: [{ role: "system", content: "x" }] }, "messages[0].role:"],
      [{ model: "llama3.2:3b", messages: [{ role: "user", content: [{ type: "video" }] }] }, "messages[0].content[0].type:"],
      [{ model: "llama3.2:3b", messages: [{ role: "user", content: "x" }], stop_sequences: "END" }, "stop_sequences:"],
      [{ messages: [{ role: "user", content: "x" }] }, "model:"],
    ] as const) {
      const res = await post("/v1/messages", body, { "anthropic-version": "2023-06-01" });
      expect(res.status).toBe(400);
      expect(res.headers.get("anthropic-version")).toBe("2023-06-01");
      expect(res.headers.get("x-fleet-node")).toBe("none");
      const error = (await res.json()) as any;
      expect(error.type).toBe("error");
      expect(error.error.type).toBe("invalid_request_error");
      expect(error.error.message).toStartWith(field);
    }
  });

  test("GET /v1/messages answers Claude Code's probe", async () => {
    const probe = await getJson(`${url}/v1/messages`);
    expect(probe).toMatchObject({ ok: true, service: "ollama-herd", endpoint: "/v1/messages" });
    expect(Math.abs(probe.ts - Date.now() / 1000)).toBeLessThan(60);
  });
});

describe("limits and resolution off", () => {
  test("404 not_found_error when nothing can serve; 413 prompt_too_large with the /compact hint; 503 overloaded_error", async () => {
    const strict = await fleet({ id: "small", models: ["llama3.2:1b"], loaded: ["llama3.2:1b"] }, "anthropic: { autoRoute: false, maxPromptTokens: 1000 }");
    const c = new Anthropic({ baseURL: strict.url, apiKey: "unused", maxRetries: 0 });
    const missing = await c.messages.create({ model: "claude-opus-4-1", max_tokens: 10, messages: [user("hi")] }).catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error.error.type).toBe("not_found_error");
    expect(missing.message).toContain("claude-opus-4-1");
    expect(missing.headers.get("x-fleet-served-model")).toBe("none");

    const res = await fetch(`${strict.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "llama3.2:1b", max_tokens: 10, messages: [{ role: "user", content: "many words ".repeat(1000) }] }),
    });
    expect(res.status).toBe(413);
    const error = (await res.json()) as any;
    expect(error.error.type).toBe("prompt_too_large");
    expect(error.error.message).toContain("/compact");
    // Under the cap, the same local model serves.
    expect((await c.messages.create({ model: "llama3.2:1b", max_tokens: 10, messages: [user("hi")] })).type).toBe("message");

    // A model that exists where no node can serve it now: 503 overloaded_error with Retry-After.
    strict.sim.setFaults({ error500: true });
    const busy = await c.messages.create({ model: "llama3.2:1b", max_tokens: 10, messages: [user("hi")] }).catch((e) => e);
    expect(busy).toBeInstanceOf(Anthropic.InternalServerError);
    expect(busy.status).toBe(503);
    expect(busy.error.error.type).toBe("overloaded_error");
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("capability lookups", () => {
  test("a node slow to answer /api/show holds a thinking request up for the lookup's bound at most; thinking is then left to the model", async () => {
    const slow = await fleet({ id: "slow", models: ["qwen3:8b"], loaded: ["qwen3:8b"] });
    slow.sim.setFaults({ firstByteDelayMs: 2500 }); // every answer, /api/show's included
    try {
      const started = Date.now();
      const res = await fetch(`${slow.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3:8b", max_tokens: 300, thinking: { type: "disabled" }, messages: [{ role: "user", content: "hi" }] }),
      });
      const message = (await res.json()) as any;
      // Had herd waited for /api/show, it would have told the model not to think.
      expect(message.content.map((b: any) => b.type)).toEqual(["thinking", "text"]);
      expect(Date.now() - started).toBeLessThan(2500 + 2000 + 1500);
    } finally {
      slow.sim.setFaults({});
    }
  }, 15_000);
});

describe("a Claude Code turn (fixture)", () => {
  const fixture = JSON.parse(readFileSync(join(import.meta.dir, "fixtures/claude-code-turn.json"), "utf8"));

  test("Claude Code's first request as captured (mid-conversation system message, deferred tools, adaptive thinking, context_management), streamed thinking and tool_use, then the tool_result follow-up, event by event", async () => {
    expect(fixture.body.messages.map((m: any) => m.role)).toEqual(["user", "system"]);
    expect(fixture.body.tools.some((t: any) => t.defer_loading)).toBe(true);
    const first = await post(fixture.path, fixture.body, fixture.headers);
    expect(first.status).toBe(200);
    expect(first.headers.get("anthropic-version")).toBe("2023-06-01");
    expect(first.headers.get("x-fleet-served-model")).toBe("qwen3:8b"); // opus: the large tier, a reasoning model first
    const events = parseSse(await first.text());
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      ...["content_block_start", "content_block_delta", "content_block_stop"], // thinking, its text omitted: only the signature
      ...["content_block_start", "content_block_delta", "content_block_stop"], // tool_use
      "message_delta",
      "message_stop",
    ]);
    const [start, thinkingStart, signature, , blockStart, delta, blockStop, messageDelta] = events.map((e) => e.data);
    expect(start.message).toMatchObject({ model: fixture.body.model, content: [], stop_reason: null });
    expect(start.message.usage.input_tokens).toBeGreaterThan(5000);
    expect(messageDelta.usage.input_tokens).toBe(start.message.usage.input_tokens);
    expect(thinkingStart.content_block).toEqual({ type: "thinking", thinking: "", signature: "" });
    expect(signature.delta).toEqual({ type: "signature_delta", signature: expect.any(String) });
    expect(blockStart).toEqual({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "Read", input: {} } });
    expect(delta).toEqual({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: JSON.stringify({ file_path: "example file path" }) } });
    expect(blockStop).toEqual({ type: "content_block_stop", index: 1 });
    expect(messageDelta.delta).toEqual({ stop_reason: "tool_use", stop_sequence: null });
    expect(messageDelta.usage.output_tokens).toBeGreaterThan(0);

    const toolUse = { type: "tool_use", id: blockStart.content_block.id, name: "Read", input: JSON.parse(delta.delta.partial_json) };
    const followUp = {
      ...fixture.body,
      messages: [
        ...fixture.body.messages,
        { role: "assistant", content: [{ type: "thinking", thinking: "", signature: signature.delta.signature }, toolUse] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: toolUse.id, content: fixture.tool_result, cache_control: { type: "ephemeral" } }] },
      ],
    };
    const second = parseSse(await (await post(fixture.path, followUp, fixture.headers)).text());
    const names = second.map((e) => e.event);
    const deltas = names.filter((n) => n === "content_block_delta").length - 1;
    expect(names).toEqual([
      "message_start",
      ...["content_block_start", "content_block_delta", "content_block_stop"],
      ...["content_block_start", ...Array(deltas).fill("content_block_delta"), "content_block_stop"],
      "message_delta",
      "message_stop",
    ]);
    expect(second[4]!.data.content_block).toEqual({ type: "text", text: "" });
    expect(second.at(-2)!.data.delta.stop_reason).toBe("end_turn");
    expect(second[0]!.data.message.usage.input_tokens).toBeGreaterThan(start.message.usage.input_tokens);

    // metadata.user_id is JSON text with a per-session id: the trace is tagged with the device, not the session.
    const traces = await eventually(async () => {
      const all = (await getJson(`${url}/dashboard/api/traces?limit=50`)).traces as any[];
      const mine = all.filter((t) => t.original_model === fixture.body.model);
      return mine.length >= 2 && mine;
    }, 3000, "the fixture's traces");
    for (const t of traces) expect(t.tags).toEqual([`user:${"0".repeat(64)}`]);
  });
});

test("StopScanner finds a stop sequence split across pieces and holds back only what could start one", () => {
  const s = new StopScanner(["\n\nHuman:"]);
  expect(s.push("Hello\n")).toBe("Hello");
  expect(s.push("\nHu")).toBe("");
  expect(s.push("man: more")).toBe("");
  expect(s.matched).toBe("\n\nHuman:");
  const t = new StopScanner(["END"]);
  expect(t.push("the EN")).toBe("the ");
  expect(t.push("D-less")).toBe("");
  expect(t.matched).toBe("END");
  const u = new StopScanner(["END"]);
  expect(u.push("EN")).toBe("");
  expect(u.push("TRY")).toBe("ENTRY");
  expect(u.flush()).toBe("");
});

describe("images with tools", () => {
  test("a claude-* request with an image and tools goes to a vision model that can call tools", async () => {
    const vision = ["gemma3:27b", "mistral-small3.1:24b", "llama3.2:3b"];
    const { url: visionUrl } = await fleet({ id: "vision", models: vision, loaded: vision, memoryGb: 128 });
    const res = await fetch(`${visionUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        tools: [{ name: "describe", description: "describe", input_schema: { type: "object", properties: {} } }],
        messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }],
      }),
    });
    expect(res.headers.get("x-fleet-served-model")).toBe("mistral-small3.1:24b"); // gemma3:27b is bigger and sees images, but cannot call tools
    expect(res.status).toBe(200);
    await res.json();
  });
});

describe("a fleet whose only node is down", () => {
  test("a claude-* id is a 503 Claude Code retries (overloaded), not a 404 saying no model exists", async () => {
    const down = await fleet({ id: "mini", models: ["qwen2.5-coder:7b"], loaded: ["qwen2.5-coder:7b"] });
    await down.sim.stop();
    await eventually(async () => (await getJson(`${down.url}/fleet/status`)).nodes.every((n: any) => n.excluded), 20_000, "the node found down");
    const res = await fetch(`${down.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    const body = (await res.json()) as any;
    expect([res.status, body.type], JSON.stringify(body)).toEqual([503, "error"]);
    expect(body.error.type).toBe("overloaded_error");
  }, 30_000);
});
