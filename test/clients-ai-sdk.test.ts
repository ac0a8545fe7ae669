// The AI SDK (ai 7) with each provider a user would point at herd, against a
// router process over a simulated Ollama node: @ai-sdk/openai-compatible on
// /v1 (Chat Completions, embeddings), ollama-ai-provider-v2 on /api,
// ai-sdk-ollama on the root (the ollama package), @ai-sdk/anthropic on /v1
// (Messages). generateText, streamText, a tool loop (stopWhen), structured
// output (Output.object, generateObject) and embed / embedMany. Each assertion
// names the field or stream part it reads; a provider's own error comes with
// the bytes that went over the wire.
import { beforeAll, describe, expect, test } from "bun:test";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { embed, embedMany, type EmbeddingModel, generateObject, generateText, isStepCount, jsonSchema, type LanguageModel, Output, streamText, tool } from "ai";
import { createOllama as createAiSdkOllama } from "ai-sdk-ollama";
import { createOllama as createOllamaV2 } from "ollama-ai-provider-v2";
import { CATALOG } from "../src/sim/index.ts";
import { startClientFleet, Wire } from "./clients.ts";

// Warnings are asserted where they matter (result.warnings), not printed.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

const CHAT = "llama3.2:3b";
const THINKER = "qwen3:8b";
const MISSING = "nope:1b";
const EMBED = "nomic-embed-text";
const DIMS = CATALOG.find((m) => m.name === `${EMBED}:latest`)!.embeddingLength;

let fleet: Awaited<ReturnType<typeof startClientFleet>>;
beforeAll(async () => {
  fleet = await startClientFleet([{ id: "studio", models: [CHAT, THINKER, EMBED], loaded: [CHAT, THINKER, EMBED], tokensPerSecond: 2000 }]);
});

// The sim calls the tool because the user line asks it to (src/sim/replies.ts).
const ASK_WEATHER = 'What is the weather in Paris?\nsim: call get_weather {"city":"Paris"}';
const FORECAST = jsonSchema<{ city: string; celsius: number }>({
  type: "object",
  properties: { city: { type: "string" }, celsius: { type: "number" } },
  required: ["city", "celsius"],
  additionalProperties: false,
});

/** get_weather, whose execute records its inputs and answers `result`. */
function weatherTool(result: string, inputs: unknown[]) {
  return tool({
    description: "Get the current weather for a city",
    inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }),
    execute: async (input) => {
      inputs.push(input);
      return { forecast: result };
    },
  });
}

interface Provider {
  name: string;
  wire: Wire;
  chat(): LanguageModel;
  /** The model structured output is asked of, when not chat(). */
  objects?(): LanguageModel;
  embedding?(): EmbeddingModel;
  /** A thinking model, asked to think the way this provider's docs say (ai 7's `reasoning` unless the model's settings). */
  thinker(): { model: LanguageModel; reasoning?: "low" };
  /** Options every call needs with this provider. */
  call?: { maxOutputTokens?: number };
  /** The chat model of a name the fleet lacks (none: the surface auto-routes unknown ids, as herd's Anthropic surface does). */
  missing?(): LanguageModel;
  /** Why its structured-output test fails today, until a fix lands elsewhere. */
  objectsPending?: string;
}

const providers: Provider[] = [
  (() => {
    const wire = new Wire();
    const herd = () => createOpenAICompatible({ name: "herd", baseURL: `${fleet.url}/v1`, includeUsage: true, supportsStructuredOutputs: true, fetch: wire.fetch });
    return { name: "@ai-sdk/openai-compatible (herd /v1: chat/completions, embeddings)", wire, chat: () => herd().chatModel(CHAT), embedding: () => herd().embeddingModel(EMBED), thinker: () => ({ model: herd().chatModel(THINKER), reasoning: "low" }), missing: () => herd().chatModel(MISSING) };
  })(),
  (() => {
    const wire = new Wire();
    const herd = () => createOllamaV2({ baseURL: `${fleet.url}/api`, fetch: wire.fetch });
    return { name: "ollama-ai-provider-v2 (herd /api: chat, embed)", wire, chat: () => herd()(CHAT), embedding: () => herd().embedding(EMBED), thinker: () => ({ model: herd()(THINKER), reasoning: "low" }), missing: () => herd()(MISSING) };
  })(),
  (() => {
    const wire = new Wire();
    const herd = () => createAiSdkOllama({ baseURL: fleet.url, fetch: wire.fetch });
    return {
      name: "ai-sdk-ollama (herd root: /api/chat, /api/embed)",
      wire,
      chat: () => herd()(CHAT),
      embedding: () => herd().embedding(EMBED),
      // Its README asks for thinking in the model's settings; ai 7's `reasoning: "low"` it sends on as think: "low", which Ollama takes from gpt-oss only.
      thinker: () => ({ model: herd()(THINKER, { think: true }) }),
      missing: () => herd()(MISSING),
    };
  })(),
  (() => {
    const wire = new Wire();
    const herd = () => createAnthropic({ baseURL: `${fleet.url}/v1`, apiKey: "unused", fetch: wire.fetch });
    // A claude-* id is what this provider asks native structured output of (output_config.format); herd resolves it to a local model.
    return {
      name: "@ai-sdk/anthropic (herd /v1/messages)",
      wire,
      chat: () => herd()(CHAT),
      thinker: () => ({ model: herd()(THINKER), reasoning: "low" }),
      objects: () => herd()("claude-sonnet-4-5"),
      call: { maxOutputTokens: 1024 },
      objectsPending: "FAILS until the Anthropic surface translates output_config.format (today it is dropped and the model answers prose)",
    };
  })(),
];

for (const p of providers) {
  describe(p.name, () => {
    const { wire } = p;
    const ask = (prompt: string) => ({ model: p.chat(), prompt, maxRetries: 0, ...p.call });

    test("generateText and streamText: text, finishReason, usage; the stream is the same text in pieces", async () => {
      const whole = await wire.explain("generateText", () => generateText(ask("Tell me about caching")));
      const said = `\n${wire.describe(1)}`;
      expect(whole.text, `generateText: text${said}`).toContain("caching");
      expect(whole.finishReason, `generateText: finishReason${said}`).toBe("stop");
      expect(whole.usage.inputTokens, `generateText: usage.inputTokens${said}`).toBeGreaterThan(0);
      expect(whole.usage.outputTokens, `generateText: usage.outputTokens${said}`).toBeGreaterThan(3);

      const errors: unknown[] = [];
      const streamed = streamText({ ...ask("Tell me about caching"), onError: ({ error }) => void errors.push(error) });
      const pieces: string[] = [];
      for await (const piece of streamed.textStream) pieces.push(piece);
      const usage = await streamed.usage;
      const saidStream = `\n${wire.describe(1)}`;
      expect(errors, `streamText: error parts${saidStream}`).toEqual([]);
      expect(pieces.length, `streamText: text-delta parts${saidStream}`).toBeGreaterThan(3);
      expect(pieces.join(""), `streamText: the text-deltas, joined${saidStream}`).toBe(whole.text);
      expect(await streamed.finishReason, `streamText: finishReason${saidStream}`).toBe("stop");
      expect([usage.inputTokens, usage.outputTokens], `streamText: usage (inputTokens, outputTokens)${saidStream}`).toEqual([whole.usage.inputTokens, whole.usage.outputTokens]);
    });

    test("a tool loop (stopWhen: isStepCount): the model calls the tool, execute runs, the result goes back, a final text", async () => {
      const loop = async (result: string) => {
        const inputs: unknown[] = [];
        const r = await wire.explain("generateText with tools", () => generateText({ ...ask(ASK_WEATHER), tools: { get_weather: weatherTool(result, inputs) }, stopWhen: isStepCount(4) }));
        const said = `\n${wire.describe(2)}`;
        expect(inputs, `execute's inputs (the call's parsed arguments)${said}`).toEqual([{ city: "Paris" }]);
        expect(r.steps.map((s) => s.finishReason), `steps[].finishReason${said}`).toEqual(["tool-calls", "stop"]);
        expect(r.steps[0]!.toolCalls.map((c) => [c.toolName, c.input]), `steps[0].toolCalls (name, input)${said}`).toEqual([["get_weather", { city: "Paris" }]]);
        expect(r.text, `the final text${said}`).toContain("weather");
        return r.text;
      };
      const sunny = await loop("18°C and sunny");
      // The answer is a function of the whole conversation: another tool result gives another answer, so the result reached the model.
      expect(await loop("3°C and raining"), "the final text when the tool result differs (the tool result reached the model)").not.toBe(sunny);
    });

    test("a tool loop streamed: tool-call, tool-result, then the final text, in order", async () => {
      const inputs: unknown[] = [];
      const streamed = streamText({ ...ask(ASK_WEATHER), tools: { get_weather: weatherTool("18°C and sunny", inputs) }, stopWhen: isStepCount(4) });
      const parts: string[] = [];
      const errors: unknown[] = [];
      for await (const part of streamed.fullStream) {
        if (part.type === "error") errors.push(part.error);
        if (parts.at(-1) !== part.type) parts.push(part.type);
      }
      const said = `\n${wire.describe(2)}`;
      expect(errors, `fullStream: error parts${said}`).toEqual([]);
      expect(inputs, `execute's inputs${said}`).toEqual([{ city: "Paris" }]);
      const order = parts.filter((t) => ["tool-call", "tool-result", "finish-step", "text-delta", "finish"].includes(t));
      expect(order, `fullStream: the order of its parts (all: ${parts.join(", ")})${said}`).toEqual(["tool-call", "tool-result", "finish-step", "text-delta", "finish-step", "finish"]);
      expect(await streamed.text, `streamText: the final step's text${said}`).toContain("weather");
    });

    test("reasoning from a thinking model: reasoningText apart from the text, generated and streamed", async () => {
      const { model, reasoning } = p.thinker();
      const r = await wire.explain("generateText with reasoning", () => generateText({ ...ask("Why is the sky blue"), model, reasoning }));
      const said = `\n${wire.describe(1)}`;
      expect(r.reasoningText ?? "(none)", `generateText: reasoningText (from message.thinking / reasoning / thinking blocks)${said}`).toContain("Okay, the user is asking about Why is the sky blue");
      expect(r.text, `generateText: text${said}`).toContain("sky");
      expect(r.text, `generateText: text holds no reasoning${said}`).not.toContain("Okay, the user");
      const streamed = streamText({ ...ask("Why is the sky blue"), model, reasoning });
      const parts = new Set<string>();
      for await (const part of streamed.fullStream) parts.add(part.type);
      const saidStream = `\n${wire.describe(1)}`;
      expect(parts.has("error"), `streamText: an error part${saidStream}`).toBe(false);
      expect(parts.has("reasoning-delta"), `streamText: reasoning-delta parts${saidStream}`).toBe(true);
      expect(await streamed.reasoningText, `streamText: reasoningText${saidStream}`).toBe(r.reasoningText);
      expect(await streamed.text, `streamText: text${saidStream}`).toBe(r.text);
    });

    test(`structured output: generateText with Output.object, and generateObject, give an object of the schema${p.objectsPending ? ` [${p.objectsPending}]` : ""}`, async () => {
      const model = p.objects?.() ?? p.chat();
      const r = await wire.explain("generateText with Output.object", () => generateText({ ...ask("The weather in Paris"), model, output: Output.object({ schema: FORECAST }) }));
      const said = `\n${wire.describe(1)}`;
      expect(r.warnings, `Output.object: warnings (a provider falling back from the JSON schema says so here)${said}`).toEqual([]);
      expect(Object.keys(r.output).sort(), `Output.object: the object's keys${said}`).toEqual(["celsius", "city"]);
      expect([typeof r.output.city, typeof r.output.celsius], `Output.object: the types of city, celsius${said}`).toEqual(["string", "number"]);
      const o = await wire.explain("generateObject", () => generateObject({ ...ask("The weather in Paris"), model, schema: FORECAST }));
      expect(o.object, `generateObject: the object${wire.describe(1)}`).toEqual(r.output);
    });

    if (p.missing) {
      const missing = p.missing;
      test("a model the fleet lacks: the provider's own error, carrying herd's not-found message", async () => {
        const error = await generateText({ model: missing(), prompt: "hi", maxRetries: 0 }).then(
          () => null,
          (e: Error & { statusCode?: number; responseBody?: string }) => e,
        );
        // ollama-ai-provider-v2 reads OpenAI-shaped errors even from /api, so Ollama's {"error": "…"} reaches it as the body, not the message.
        const seen = error && `${error.message} ${error.statusCode ?? ""} ${error.responseBody ?? ""}`;
        expect(seen ?? "(no error)", `the error (message, statusCode, responseBody)\n${wire.describe(1)}`).toMatch(/nope:1b\W{0,3} not found on any node/);
      });
    }

    if (p.embedding) {
      const model = p.embedding;
      test("embed and embedMany: one vector per value, of the model's dimension, each its own", async () => {
        const one = await wire.explain("embed", () => embed({ model: model(), value: "hello", maxRetries: 0 }));
        expect(one.embedding.length, `embed: the vector's length\n${wire.describe(1)}`).toBe(DIMS);
        const many = await wire.explain("embedMany", () => embedMany({ model: model(), values: ["goodbye", "hello", "again"], maxRetries: 0 }));
        const said = `\n${wire.describe(1)}`;
        expect(many.embeddings.map((v) => v.length), `embedMany: each vector's length${said}`).toEqual([DIMS, DIMS, DIMS]);
        expect(many.embeddings[1], `embedMany: the vector for "hello", as embed gave it${said}`).toEqual(one.embedding);
        expect(new Set(many.embeddings.map((v) => v.join())).size, `embedMany: distinct vectors for distinct values${said}`).toBe(3);
      });
    }
  });
}

describe("@ai-sdk/anthropic structured output with a local model id (the JSON-tool fallback)", () => {
  test("a local id gets no native output_config: the provider forces a `json` tool (tool_choice any) and reads its input as the object", async () => {
    const wire = new Wire();
    const model = createAnthropic({ baseURL: `${fleet.url}/v1`, apiKey: "unused", fetch: wire.fetch })(CHAT);
    // herd turns tool_choice "any" into a system instruction to call a tool; the sim obeys only a user line, as a model obeys the instruction.
    const r = await wire.explain("generateText with Output.object", () =>
      generateText({ model, prompt: "The weather in Paris\nsim: call json", output: Output.object({ schema: FORECAST }), maxRetries: 0, maxOutputTokens: 1024 }),
    );
    const said = `\n${wire.describe(1)}`;
    expect(wire.exchanges.at(-1)?.request ?? "(none)", "the request forces the json tool").toContain('"tool_choice":{"type":"any"');
    expect(Object.keys(r.output).sort(), `Output.object: the object's keys${said}`).toEqual(["celsius", "city"]);
    expect([typeof r.output.city, typeof r.output.celsius], `Output.object: the types of city, celsius${said}`).toEqual(["string", "number"]);
  });
});
