// LangChain's real clients against a router process over a simulated Ollama
// node: ChatOllama and OllamaEmbeddings on herd's root (the Ollama API),
// ChatOpenAI and OpenAIEmbeddings on /v1 (Chat Completions, and the Responses
// API with useResponsesApi). Each assertion names the field it reads; a
// library's own error comes with the bytes that went over the wire.
import { beforeAll, describe, expect, test } from "bun:test";
import { type AIMessage, type AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatOllama, OllamaEmbeddings } from "@langchain/ollama";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { CATALOG } from "../src/sim/index.ts";
import { startClientFleet, Wire } from "./clients.ts";

const CHAT = "llama3.2:3b";
const THINKER = "qwen3:8b";
const EMBED = "nomic-embed-text";
const DIMS = CATALOG.find((m) => m.name === `${EMBED}:latest`)!.embeddingLength;

let fleet: Awaited<ReturnType<typeof startClientFleet>>;
beforeAll(async () => {
  fleet = await startClientFleet([{ id: "studio", models: [CHAT, THINKER, EMBED], loaded: [CHAT, THINKER, EMBED], tokensPerSecond: 2000 }]);
});

const WEATHER = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
// The sim calls the tool because the user line asks it to (src/sim/replies.ts).
const ASK_WEATHER = 'What is the weather in Paris?\nsim: call get_weather {"city":"Paris"}';
const FORECAST = {
  type: "object",
  properties: { city: { type: "string" }, celsius: { type: "number" } },
  required: ["city", "celsius"],
  additionalProperties: false,
};

type Chat = ChatOllama | ChatOpenAI;

/** invoke and stream give the same deterministic answer; the stream comes in pieces and ends with usage. */
async function invokeAndStream(model: Chat, wire: Wire) {
  const whole = await wire.explain("invoke", () => model.invoke("Tell me about caching"));
  expect(whole.text, `invoke: the answer's text\n${wire.describe(1)}`).toContain("caching");
  expect(whole.usage_metadata?.input_tokens, `invoke: usage_metadata.input_tokens\n${wire.describe(1)}`).toBeGreaterThan(0);
  expect(whole.usage_metadata?.output_tokens, `invoke: usage_metadata.output_tokens\n${wire.describe(1)}`).toBeGreaterThan(3);

  let pieces = 0;
  let all: AIMessageChunk | undefined;
  await wire.explain("stream", async () => {
    for await (const chunk of await model.stream("Tell me about caching")) {
      if (chunk.text) pieces++;
      all = all ? all.concat(chunk) : chunk;
    }
  });
  expect(pieces, `stream: chunks with text\n${wire.describe(1)}`).toBeGreaterThan(3);
  expect(all?.text, `stream: the text of the chunks, joined\n${wire.describe(1)}`).toBe(whole.text);
  expect(all?.usage_metadata, `stream: usage_metadata of the chunks, summed\n${wire.describe(1)}`).toEqual(
    expect.objectContaining({ input_tokens: whole.usage_metadata!.input_tokens, output_tokens: whole.usage_metadata!.output_tokens }),
  );
}

/** One tool loop: the model calls get_weather, the ToolMessage carries `result` back, the model answers in text. */
async function toolLoop(model: Chat, wire: Wire, result: string): Promise<string> {
  const withTools = model.bindTools([WEATHER]);
  const ask = new HumanMessage(ASK_WEATHER);
  const call = (await wire.explain("the call", () => withTools.invoke([ask]))) as AIMessage;
  expect(call.tool_calls, `the first answer's tool_calls (name, parsed args)\n${wire.describe(1)}`).toEqual([
    expect.objectContaining({ name: "get_weather", args: { city: "Paris" }, type: "tool_call" }),
  ]);
  const id = call.tool_calls![0]!.id;
  expect(id, `the tool call's id\n${wire.describe(1)}`).toBeTruthy();
  const final = (await wire.explain("the answer after the tool", () => withTools.invoke([ask, call, new ToolMessage({ content: result, tool_call_id: id! })]))) as AIMessage;
  expect(final.tool_calls ?? [], `the final answer's tool_calls (the call was sent back, so none is due)\n${wire.describe(1)}`).toEqual([]);
  expect(final.text, `the final answer's text\n${wire.describe(1)}`).toContain("weather");
  return final.text;
}

async function toolLoopTest(model: Chat, wire: Wire) {
  const sunny = await toolLoop(model, wire, "18°C and sunny");
  // The answer is a function of the whole conversation: a different tool result gives another one, so the result reached the model.
  expect(await toolLoop(model, wire, "3°C and raining"), "the final answer when the tool result differs (the ToolMessage's content reached the model)").not.toBe(sunny);
}

/** A tool call streamed: the chunks add up to the same parsed call. */
async function streamedToolCall(model: Chat, wire: Wire) {
  let all: AIMessageChunk | undefined;
  await wire.explain("stream with tools", async () => {
    for await (const chunk of await model.bindTools([WEATHER]).stream([new HumanMessage(ASK_WEATHER)])) all = all ? all.concat(chunk) : chunk;
  });
  expect(all?.tool_calls, `stream: tool_calls of the chunks, joined\n${wire.describe(1)}`).toEqual([expect.objectContaining({ name: "get_weather", args: { city: "Paris" } })]);
}

async function structured(model: Chat, wire: Wire) {
  const forecast = await wire.explain("withStructuredOutput", () => model.withStructuredOutput(FORECAST, { name: "forecast" }).invoke("The weather in Paris"));
  expect(Object.keys(forecast).sort(), `withStructuredOutput: the object's keys\n${wire.describe(1)}`).toEqual(["celsius", "city"]);
  expect(typeof forecast.city, `withStructuredOutput: city\n${wire.describe(1)}`).toBe("string");
  expect(typeof forecast.celsius, `withStructuredOutput: celsius\n${wire.describe(1)}`).toBe("number");
}

/** A thinking model's answer: the reasoning stays out of the text, and comes back where the client keeps it (`where` names it; none: not read). */
async function reasoningApart(model: Chat, wire: Wire, where?: [string, (m: AIMessage) => string | undefined]) {
  const r = await wire.explain("invoke a thinking model", () => model.invoke("Why is the sky blue"));
  const said = `\n${wire.describe(1)}`;
  expect(r.text, `the text${said}`).toContain("sky");
  expect(r.text, `the text holds no reasoning${said}`).not.toContain("Okay, the user");
  if (!where) return;
  expect(where[1](r) ?? "(none)", `${where[0]}${said}`).toContain("Okay, the user is asking about Why is the sky blue");
}

describe("ChatOllama (herd's root: /api/chat)", () => {
  const wire = new Wire();
  const model = () => new ChatOllama({ model: CHAT, baseUrl: fleet.url, fetch: wire.fetch });

  test("invoke and stream: text, the same text in pieces, usage_metadata", () => invokeAndStream(model(), wire));
  test("bindTools: the call's args parsed, the ToolMessage sent back, a final text", () => toolLoopTest(model(), wire));
  test("bindTools, streamed: the tool call comes through the chunks", () => streamedToolCall(model(), wire));
  test("withStructuredOutput (format: the JSON schema)", () => structured(model(), wire));
  test("a model the fleet lacks: ollama's ResponseError with herd's message", async () => {
    const error = await new ChatOllama({ model: "nope:1b", baseUrl: fleet.url, fetch: wire.fetch }).invoke("hi").then(() => null, (e: Error) => e);
    expect(error?.message ?? "(no error)", `the error's message\n${wire.describe(1)}`).toContain('"nope:1b" not found on any node');
  });
  test("think: the reasoning as a reasoning block (message.thinking), apart from the text", () =>
    reasoningApart(new ChatOllama({ model: THINKER, baseUrl: fleet.url, fetch: wire.fetch, think: true }), wire, [
      "contentBlocks of type reasoning",
      (m) => m.contentBlocks.flatMap((b) => (b.type === "reasoning" ? [b.reasoning] : [])).join(""),
    ]));
});

describe("OllamaEmbeddings (herd's root: /api/embed)", () => {
  const wire = new Wire();
  test("embedQuery and embedDocuments: one vector per text, of the model's dimension, each its own", async () => {
    const embeddings = new OllamaEmbeddings({ model: EMBED, baseUrl: fleet.url, fetch: wire.fetch });
    const query = await wire.explain("embedQuery", () => embeddings.embedQuery("hello"));
    expect(query.length, `embedQuery: the vector's length (embeddings[0])\n${wire.describe(1)}`).toBe(DIMS);
    const docs = await wire.explain("embedDocuments", () => embeddings.embedDocuments(["hello", "goodbye"]));
    expect(docs.map((v) => v.length), `embedDocuments: each vector's length\n${wire.describe(1)}`).toEqual([DIMS, DIMS]);
    expect(docs[0], "embedDocuments: the vector for the same text as embedQuery's").toEqual(query);
    expect(docs[1], "embedDocuments: the second text's vector differs from the first's").not.toEqual(docs[0]);
  });
});

for (const responses of [false, true]) {
  describe(`ChatOpenAI on herd's /v1 (${responses ? "the Responses API, useResponsesApi: /v1/responses" : "Chat Completions: /v1/chat/completions"})`, () => {
    const wire = new Wire();
    const model = () => new ChatOpenAI({ model: CHAT, apiKey: "unused", maxRetries: 0, useResponsesApi: responses, configuration: { baseURL: `${fleet.url}/v1`, fetch: wire.fetch } });

    test("invoke and stream (streamUsage): text, the same text in pieces, usage_metadata", async () => {
      await invokeAndStream(model(), wire);
      expect(wire.exchanges.at(-1)?.request ?? "(none)", "the request went to the API asked for").toStartWith(`POST /v1/${responses ? "responses" : "chat/completions"} `);
    });
    test("bindTools: the call's args parsed, the ToolMessage sent back, a final text", () => toolLoopTest(model(), wire));
    test("bindTools, streamed: the tool call comes through the chunks", () => streamedToolCall(model(), wire));
    if (!responses) {
      // (The Responses surface auto-routes an id it does not know, as for Codex: docs/responses.md.)
      test("a model the fleet lacks: the OpenAI SDK's NotFoundError (404) with herd's message", async () => {
        const error = await new ChatOpenAI({ model: "nope:1b", apiKey: "unused", maxRetries: 0, configuration: { baseURL: `${fleet.url}/v1`, fetch: wire.fetch } })
          .invoke("hi")
          .then(() => null, (e: Error & { status?: number }) => e);
        expect([error?.constructor.name, error?.status], `the error's class and status\n${wire.describe(1)}`).toEqual(["NotFoundError", 404]);
        expect(error!.message, "the error's message").toContain('"nope:1b" not found on any node');
      });
    }
    test(`withStructuredOutput (${responses ? "text.format" : "response_format"} json_schema)`, () => structured(model(), wire));
    // LangChain reads Chat Completions reasoning from `reasoning_content` only; herd (like Ollama's /v1) sends `reasoning`, so there
    // this checks only that none leaks into the text. From the Responses API it builds reasoning blocks of summaries only, and keeps
    // the reasoning item itself (herd's raw reasoning_text content) in additional_kwargs.reasoning.
    test(`a thinking model: the reasoning stays out of the text${responses ? ", and comes back as the reasoning item's reasoning_text" : ""}`, () =>
      reasoningApart(
        new ChatOpenAI({ model: THINKER, apiKey: "unused", maxRetries: 0, useResponsesApi: responses, configuration: { baseURL: `${fleet.url}/v1`, fetch: wire.fetch } }),
        wire,
        responses
          ? ["additional_kwargs.reasoning.content[].text", (m) => (m.additional_kwargs.reasoning as { content?: { text: string }[] } | undefined)?.content?.map((c) => c.text).join("")]
          : undefined,
      ));
  });
}

describe("OpenAIEmbeddings (herd's /v1/embeddings)", () => {
  const wire = new Wire();
  test("embedQuery and embedDocuments (base64 on the wire): the same vectors as Ollama's; dimensions shortens them", async () => {
    const openai = (dimensions?: number) => new OpenAIEmbeddings({ model: EMBED, apiKey: "unused", maxRetries: 0, dimensions, configuration: { baseURL: `${fleet.url}/v1`, fetch: wire.fetch } });
    const query = await wire.explain("embedQuery", () => openai().embedQuery("hello"));
    expect(query.length, `embedQuery: the vector's length (data[0].embedding)\n${wire.describe(1)}`).toBe(DIMS);
    const docs = await wire.explain("embedDocuments", () => openai().embedDocuments(["hello", "goodbye"]));
    expect(docs.map((v) => v.length), `embedDocuments: each vector's length\n${wire.describe(1)}`).toEqual([DIMS, DIMS]);
    expect(docs[1], "embedDocuments: the second text's vector differs from the first's").not.toEqual(docs[0]);
    // What Ollama's API gives for the text, to float32 precision (the OpenAI SDK asks for base64 float32).
    const native = await new OllamaEmbeddings({ model: EMBED, baseUrl: fleet.url }).embedQuery("hello");
    const worst = Math.max(...native.map((v, i) => Math.abs(v - query[i]!)));
    expect(worst, "embedQuery: the largest difference from /api/embed's vector for the same text").toBeLessThan(1e-6);
    const short = await wire.explain("embedQuery with dimensions", () => openai(256).embedQuery("hello"));
    expect(short.length, `dimensions: 256 → the vector's length\n${wire.describe(1)}`).toBe(256);
  });
});
