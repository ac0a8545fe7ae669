// Black-box tests of the simulated nodes, through the wire: the official
// ollama and openai clients for behaviour, raw fetch for byte-level formats.
import { afterEach, describe, expect, test } from "bun:test";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { demoFleet, startSimMlx, startSimOllama, type SimNode, type SimNodeOptions } from "../src/sim/index.ts";
import { catalogSpec, decodeTokensPerSecond, sizeBytes } from "../src/sim/models.ts";
import { NEWEST_OLLAMA } from "../src/fleet/ollama-releases.ts";
import { postJson } from "../src/backends/http1.ts";
import { readCapped } from "../src/core/capped-body.ts";

const started: SimNode[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((n) => n.stop()));
});

async function ollamaNode(opts: Partial<SimNodeOptions> = {}): Promise<SimNode> {
  const node = await startSimOllama({ id: "test-node", models: ["llama3.2:3b", "qwen3:8b", "nomic-embed-text"], loaded: ["llama3.2:3b"], ...opts });
  started.push(node);
  return node;
}

async function mlxNode(faults = {}): Promise<SimNode> {
  const node = await startSimMlx({ id: "test-mlx", model: "mlx-community/Qwen3-8B-4bit", faults });
  started.push(node);
  return node;
}

const client = (node: SimNode) => new Ollama({ host: node.url });
const openai = (node: SimNode) => new OpenAI({ baseURL: `${node.url}/v1`, apiKey: "sim", maxRetries: 0 });
const post = (node: SimNode, path: string, body: unknown, init: RequestInit = {}) =>
  fetch(`${node.url}${path}`, { method: "POST", body: JSON.stringify(body), ...init });
const ask = (content: string) => [{ role: "user", content }];
// Bodies are asserted field by field; `any` keeps that readable.
const jsonOf = (res: Response): Promise<any> => res.json();

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;
const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        days: { type: "integer" },
      },
      required: ["city", "unit"],
    },
  },
};

// Reads a body until the server closes or drops it; returns what arrived.
async function readUntilEnd(res: Response): Promise<{ text: string; dropped: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, dropped: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, dropped: true };
  }
}

// Sends raw bytes on a new connection; resolves with all that came back once the server closes it.
function rawExchange(port: number, request: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    const timer = setTimeout(() => reject(new Error(`no close within ${timeoutMs} ms; got ${JSON.stringify(received.slice(0, 200))}`)), timeoutMs);
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (socket) => void socket.write(request),
        data: (_, bytes) => void (received += bytes.toString("latin1")),
        close: () => {
          clearTimeout(timer);
          resolve(received);
        },
        error: (_, e) => reject(e),
      },
    }).catch(reject);
  });
}

describe("ollama sim through the ollama client", () => {
  test("version, tags, ps and show describe the node", async () => {
    const node = await ollamaNode();
    const ollama = client(node);
    expect(await (await fetch(node.url)).text()).toBe("Ollama is running");
    expect((await ollama.version()).version).toBe(NEWEST_OLLAMA);
    expect((await client(await ollamaNode({ ollamaVersion: "0.13.10" })).version()).version).toBe("0.13.10");

    const { models } = await ollama.list();
    expect(models.map((m) => m.name)).toEqual(["llama3.2:3b", "qwen3:8b", "nomic-embed-text:latest"]);
    const llama = models[0]!;
    expect(llama.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(llama.size).toBeGreaterThan(1.5e9);
    expect(llama.size).toBeLessThan(2.5e9);
    expect(llama.details).toEqual({
      parent_model: "",
      format: "gguf",
      family: "llama",
      families: ["llama"],
      parameter_size: "3.2B",
      quantization_level: "Q4_K_M",
    });

    const ps = await ollama.ps();
    expect(ps.models.map((m) => m.name)).toEqual(["llama3.2:3b"]);
    expect(ps.models[0]!.size_vram).toBe(ps.models[0]!.size);
    expect(String(ps.models[0]!.expires_at)).toMatch(RFC3339);

    const shown = await ollama.show({ model: "qwen3:8b" });
    expect(shown.capabilities).toEqual(["completion", "tools", "thinking"]);
    expect((shown.model_info as unknown as Record<string, unknown>)["qwen3.context_length"]).toBe(40960);
  });

  test("chat is deterministic, and streaming yields the same text as one object", async () => {
    const ollama = client(await ollamaNode());
    const whole = await ollama.chat({ model: "llama3.2:3b", messages: ask("Why is the sky blue?") });
    expect(whole.done).toBe(true);
    expect(whole.done_reason).toBe("stop");
    expect(whole.message.content.length).toBeGreaterThan(20);
    expect(whole.eval_count).toBeGreaterThan(5);
    expect(whole.total_duration).toBeGreaterThanOrEqual(whole.eval_duration);

    const again = await ollama.chat({ model: "llama3.2:3b", messages: ask("Why is the sky blue?") });
    expect(again.message.content).toBe(whole.message.content);
    const other = await ollama.chat({ model: "llama3.2:3b", messages: ask("What is a GPU?") });
    expect(other.message.content).not.toBe(whole.message.content);

    const parts: string[] = [];
    let last;
    for await (const chunk of await ollama.chat({ model: "llama3.2:3b", messages: ask("Why is the sky blue?"), stream: true })) {
      if (!chunk.done) parts.push(chunk.message.content);
      last = chunk;
    }
    expect(parts.join("")).toBe(whole.message.content);
    expect(last!.done).toBe(true);
    expect(last!.eval_count).toBe(parts.length);
  });

  test("generate streams, returns context, and num_predict caps tokens", async () => {
    const ollama = client(await ollamaNode());
    let text = "";
    let final;
    for await (const chunk of await ollama.generate({ model: "llama3.2:3b", prompt: "Tell me about llamas", stream: true })) {
      text += chunk.response;
      final = chunk;
    }
    expect(text.length).toBeGreaterThan(20);
    expect(final!.context.length).toBeGreaterThan(final!.eval_count);

    const capped = await ollama.generate({ model: "llama3.2:3b", prompt: "Tell me about llamas", options: { num_predict: 5 } });
    expect(capped.eval_count).toBe(5);
    expect(capped.done_reason).toBe("length");
    expect(text.startsWith(capped.response!)).toBe(true);
  });

  test("thinking models think unless told not to; others refuse think", async () => {
    const ollama = client(await ollamaNode());
    const thought = await ollama.chat({ model: "qwen3:8b", messages: ask("Plan a trip") });
    expect(thought.message.thinking).toContain("Plan a trip");
    const direct = await ollama.chat({ model: "qwen3:8b", messages: ask("Plan a trip"), think: false });
    expect(direct.message.thinking).toBeUndefined();
    const refused = ollama.chat({ model: "llama3.2:3b", messages: ask("Plan a trip"), think: true });
    await expect(refused).rejects.toMatchObject({ status_code: 400, error: '"llama3.2:3b" does not support thinking' });
  });

  test("capability errors: embedding models don't chat, gemma3 doesn't take tools", async () => {
    const ollama = client(await ollamaNode({ models: ["gemma3:4b", "nomic-embed-text"], loaded: [] }));
    await expect(ollama.chat({ model: "nomic-embed-text", messages: ask("hi") })).rejects.toMatchObject({
      status_code: 400,
      error: '"nomic-embed-text" does not support chat',
    });
    await expect(ollama.chat({ model: "gemma3:4b", tools: [weather], messages: ask("hi") })).rejects.toMatchObject({
      status_code: 400,
      error: "registry.ollama.ai/library/gemma3:4b does not support tools",
    });
  });

  test("a message naming a tool gets a tool call with arguments built from its schema", async () => {
    const ollama = client(await ollamaNode());
    const res = await ollama.chat({ model: "llama3.2:3b", tools: [weather], messages: ask("sim: call get_weather") });
    expect(res.message.content).toBe("");
    expect(res.message.tool_calls).toHaveLength(1);
    const call = res.message.tool_calls![0]!;
    expect(call.function.name).toBe("get_weather");
    expect(call.function.arguments).toEqual({ city: "example city", unit: "celsius" });

    const plain = await ollama.chat({ model: "llama3.2:3b", tools: [weather], messages: ask("Hello there") });
    expect(plain.message.tool_calls).toBeUndefined();
    expect(plain.message.content.length).toBeGreaterThan(0);

    // After the tool's result the model answers in text, so agent loops end.
    const after = await ollama.chat({
      model: "llama3.2:3b",
      tools: [weather],
      messages: [...ask("sim: call get_weather"), res.message, { role: "tool", content: "18°C, sunny", tool_name: "get_weather" }],
    });
    expect(after.message.tool_calls).toBeUndefined();
    expect(after.message.content.length).toBeGreaterThan(0);
  });

  test("embed returns deterministic unit vectors; the legacy route one vector", async () => {
    const ollama = client(await ollamaNode());
    const res = await ollama.embed({ model: "nomic-embed-text", input: ["first text", "second text"] });
    expect(res.embeddings).toHaveLength(2);
    expect(res.embeddings[0]).toHaveLength(768);
    expect(Math.hypot(...res.embeddings[0]!)).toBeCloseTo(1, 4);
    expect(res.embeddings[0]).not.toEqual(res.embeddings[1]);
    expect((await ollama.embed({ model: "nomic-embed-text", input: "first text" })).embeddings[0]).toEqual(res.embeddings[0]!);
    expect(res.prompt_eval_count).toBe(4);

    const legacy = await ollama.embeddings({ model: "nomic-embed-text", prompt: "first text" });
    expect(legacy.embedding).toHaveLength(768);
  });

  test("an embedding request with no text loads the model and answers no vectors, as real Ollama does", async () => {
    const node = await ollamaNode();
    for (const [path, body, answer] of [
      ["/api/embed", { model: "nomic-embed-text" }, '{"model":"nomic-embed-text","embeddings":[]}'],
      ["/api/embed", { model: "nomic-embed-text", input: [] }, '{"model":"nomic-embed-text","embeddings":[]}'],
      ["/api/embeddings", { model: "nomic-embed-text", prompt: "" }, '{"embedding":[]}'],
    ] as const) {
      const res = await post(node, path, body);
      expect([path, res.status, await res.text()]).toEqual([path, 200, answer]);
    }
    expect((await client(node).ps()).models.map((m) => m.name)).toContain("nomic-embed-text:latest");
    expect((await post(node, "/api/embed", { model: "nomic-embed-text", input: [1] })).status).toBe(400);
  });

  test("pull streams Ollama's progress lines, then the model is listed; delete removes it", async () => {
    const ollama = client(await ollamaNode());
    const events = [];
    for await (const event of await ollama.pull({ model: "gemma3:4b", stream: true })) events.push(event);
    const statuses = events.map((e) => e.status);
    expect(statuses[0]).toBe("pulling manifest");
    expect(statuses.slice(-3)).toEqual(["verifying sha256 digest", "writing manifest", "success"]);
    const layer = events.find((e) => e.completed && e.completed < e.total)!;
    expect(layer.status).toBe(`pulling ${layer.digest.slice(7, 19)}`);
    expect(layer.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await ollama.list()).models.map((m) => m.name)).toContain("gemma3:4b");

    // A name without a tag means :latest, which the library points at a real tag.
    expect(await ollama.pull({ model: "llama3.2" })).toEqual({ status: "success" } as never);
    const latest = (await ollama.list()).models.find((m) => m.name === "llama3.2:latest");
    expect(latest?.details.parameter_size).toBe("3.2B");
    await expect(ollama.pull({ model: "no-such-model:7b", stream: true }).then(async (it) => {
      for await (const _ of it);
    })).rejects.toThrow("pull model manifest: file does not exist");

    await ollama.delete({ model: "gemma3:4b" });
    expect((await ollama.list()).models.map((m) => m.name)).not.toContain("gemma3:4b");
    await expect(ollama.delete({ model: "gemma3:4b" })).rejects.toMatchObject({ status_code: 404 });
  });

  test("copy gives a model a second name; create makes one from another, pulling it first when it is not on disk; each refuses as Ollama does", async () => {
    const node = await ollamaNode();
    const ollama = client(node);
    expect(await ollama.copy({ source: "llama3.2:3b", destination: "mine" })).toEqual({ status: "success" });
    expect((await ollama.list()).models.map((m) => m.name)).toContain("mine:latest");
    await expect(ollama.copy({ source: "no-such:1b", destination: "x" })).rejects.toMatchObject({ status_code: 404, error: 'model "no-such:1b" not found' });
    expect(await jsonOf(await post(node, "/api/copy", { source: "llama3.2:3b" }))).toEqual({ error: 'destination "" is invalid' });

    const statuses = async (request: Parameters<typeof ollama.create>[0]) => {
      const seen: string[] = [];
      for await (const event of await ollama.create({ ...request, stream: true })) seen.push(event.status);
      return seen;
    };
    const made = await statuses({ model: "pirate", from: "llama3.2:3b", system: "Talk like a pirate" });
    expect(made.map((s) => s.replace(/[0-9a-f]{64}$/, "…"))).toEqual([...Array(4).fill("using existing layer sha256:…"), "creating new layer sha256:…", "writing manifest", "success"]);
    const pulledFirst = await statuses({ model: "small", from: "gemma3:4b" });
    expect([pulledFirst[0], ...pulledFirst.slice(-2)]).toEqual(["pulling manifest", "writing manifest", "success"]);
    expect((await ollama.list()).models.map((m) => m.name)).toEqual(expect.arrayContaining(["pirate:latest", "small:latest", "gemma3:4b"]));
    expect(await ollama.create({ model: "whole", from: "pirate" })).toEqual({ status: "success" } as never);
    const neither = await post(node, "/api/create", { model: "x" });
    expect([neither.status, await jsonOf(neither)]).toEqual([400, { error: "neither 'from' or 'files' was specified" }]);
    const noBlobs = await post(node, "/api/create", { model: "x", files: { "m.gguf": "sha256:abc" } });
    expect([noBlobs.status, await jsonOf(noBlobs)]).toEqual([500, { error: "open /Users/sim/.ollama/models/blobs/sha256-abc: no such file or directory" }]);
  });

  test("an unknown model is a 404 shaped like Ollama's", async () => {
    const node = await ollamaNode();
    const res = await post(node, "/api/chat", { model: "mistral", messages: ask("hi") });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await res.text()).toBe(`{"error":"model 'mistral' not found"}`);
    await expect(client(node).generate({ model: "mistral", prompt: "hi" })).rejects.toMatchObject({ status_code: 404 });

    const bad = await post(node, "/api/chat", undefined, { body: "hello" });
    expect(bad.status).toBe(400);
    expect(await jsonOf(bad)).toEqual({ error: "invalid character 'h' looking for beginning of value" });
  });
});

describe("ollama wire format, byte level", () => {
  test("NDJSON: every line ends in \\n and parses; the last is the done object with metrics", async () => {
    const node = await ollamaNode();
    const res = await post(node, "/api/chat", { model: "llama3.2:3b", messages: ask("hello") });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const body = await res.text();
    expect(body.endsWith("}\n")).toBe(true);
    const lines = body.slice(0, -1).split("\n").map((l) => JSON.parse(l));
    for (const line of lines.slice(0, -1)) {
      expect(Object.keys(line)).toEqual(["model", "created_at", "message", "done"]);
      expect(line.created_at).toMatch(RFC3339);
      expect(line.done).toBe(false);
    }
    const done = lines.at(-1);
    expect(Object.keys(done)).toEqual([
      "model", "created_at", "message", "done", "done_reason",
      "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration",
    ]);
    expect(done.message).toEqual({ role: "assistant", content: "" });
    for (const key of ["total_duration", "load_duration", "prompt_eval_duration", "eval_duration"]) expect(Number.isInteger(done[key])).toBe(true);
  });

  test("JSON is Go's: <, > and & are escaped", async () => {
    const node = await ollamaNode();
    const tool = structuredClone(weather);
    tool.function.parameters.properties.unit.enum = ["<b>&"];
    const res = await post(node, "/api/chat", { model: "llama3.2:3b", stream: false, tools: [tool], messages: ask("sim: call get_weather") });
    expect(await res.text()).toContain(`"unit":"\\u003cb\\u003e\\u0026"`);
  });

  test("SSE: data frames separated by a blank line, usage chunk, then data: [DONE]", async () => {
    const node = await ollamaNode();
    const res = await post(node, "/v1/chat/completions", {
      model: "llama3.2:3b",
      stream: true,
      stream_options: { include_usage: true },
      messages: ask("hello"),
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const body = await res.text();
    expect(body).toMatch(/^(data: [^\n]+\n\n)+$/);
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    const frames = body.split("\n\n").slice(0, -2).map((f) => JSON.parse(f.slice("data: ".length)));
    for (const f of frames) {
      expect(f.object).toBe("chat.completion.chunk");
      expect(f.system_fingerprint).toBe("fp_ollama");
    }
    expect(frames.at(-2).choices[0].finish_reason).toBe("stop");
    expect(frames.at(-1).choices).toEqual([]);
    expect(frames.at(-1).usage.completion_tokens).toBe(frames.length - 2);
  });
});

describe("ollama sim through the openai client", () => {
  test("chat completions, streaming and not", async () => {
    const ai = openai(await ollamaNode());
    const res = await ai.chat.completions.create({ model: "llama3.2:3b", messages: [{ role: "user", content: "hello" }] });
    expect(res.object).toBe("chat.completion");
    expect(res.id).toMatch(/^chatcmpl-\d+$/);
    expect(res.choices[0]!.finish_reason).toBe("stop");
    const text = res.choices[0]!.message.content!;
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);

    let streamed = "";
    let finish: string | null = null;
    let usage;
    const stream = await ai.chat.completions.create({
      model: "llama3.2:3b",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(streamed).toBe(text);
    expect(finish).toBe("stop");
    expect(usage!.completion_tokens).toBe(res.usage!.completion_tokens);
  });

  test("tool calls in OpenAI shape, streaming and not", async () => {
    const ai = openai(await ollamaNode());
    const messages = [{ role: "user" as const, content: "sim: call get_weather" }];
    const tools = [weather as OpenAI.ChatCompletionTool];
    const res = await ai.chat.completions.create({ model: "llama3.2:3b", messages, tools });
    expect(res.choices[0]!.finish_reason).toBe("tool_calls");
    const call = res.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe("function");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "example city", unit: "celsius" });

    const deltas = [];
    let finish: string | null = null;
    for await (const chunk of await ai.chat.completions.create({ model: "llama3.2:3b", messages, tools, stream: true })) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(deltas).toHaveLength(1);
    expect(deltas[0]).toMatchObject({ index: 0, id: call.id, function: { name: "get_weather" } });
    expect(finish).toBe("tool_calls");
  });

  test("models list and not-found errors", async () => {
    const ai = openai(await ollamaNode());
    const ids = [];
    for await (const m of ai.models.list()) ids.push(m.id);
    expect(ids).toEqual(["llama3.2:3b", "qwen3:8b", "nomic-embed-text:latest"]);
    // openai's APIPromise is born resolved and overrides then(), so await it rather than expect().rejects
    const error = await ai.chat.completions.create({ model: "mistral", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, error: { message: "model 'mistral' not found", type: "not_found_error" } });
  });
});

describe("ollama residency", () => {
  const generate = (node: SimNode, model: string, extra: Record<string, unknown> = {}) =>
    post(node, "/api/generate", { model, prompt: "hi", stream: false, options: { num_predict: 2 }, ...extra }).then(jsonOf);
  const resident = async (node: SimNode) => (await client(node).ps()).models.map((m) => m.name).sort();
  const blobPath = async (node: SimNode, model: string) => /^FROM (\S+)$/m.exec((await client(node).show({ model })).modelfile)![1]!;
  // A streaming generation whose first line has arrived: its model is busy until end() has read the rest.
  async function streaming(node: SimNode, model: string, tokens: number) {
    const reader = (await post(node, "/api/generate", { model, prompt: "hi", options: { num_predict: tokens } })).body!.getReader();
    await reader.read();
    return {
      end: async () => {
        while (!(await reader.read()).done);
      },
    };
  }

  test("loading takes loadTimeMs; the idle model evicted has the shortest keep_alive, then the first blob path /api/show names, used last or not", async () => {
    const node = await ollamaNode({
      models: ["llama3.2:3b", "qwen3:8b", "qwen2.5-coder:7b"],
      loaded: ["llama3.2:3b", "qwen3:8b"],
      memoryGb: 12, // fits two of them, not three
      loadTimeMs: 150,
    });
    // Least recently used first would evict llama3.2:3b here; qwen3:8b's blob path sorts first, so it goes.
    expect((await blobPath(node, "qwen3:8b")) < (await blobPath(node, "llama3.2:3b"))).toBe(true);
    expect((await generate(node, "llama3.2:3b")).load_duration).toBeLessThan(100e6);
    await generate(node, "qwen3:8b");
    expect((await generate(node, "qwen2.5-coder:7b")).load_duration).toBeGreaterThanOrEqual(100e6);
    expect(await resident(node)).toEqual(["llama3.2:3b", "qwen2.5-coder:7b"]);

    // llama3.2:3b, asked to stay an hour, outlasts qwen2.5-coder:7b's default five minutes, though its path sorts first
    // and qwen2.5-coder:7b was used last.
    expect((await blobPath(node, "llama3.2:3b")) < (await blobPath(node, "qwen2.5-coder:7b"))).toBe(true);
    await generate(node, "llama3.2:3b", { keep_alive: "1h" });
    await generate(node, "qwen2.5-coder:7b");
    await generate(node, "qwen3:8b");
    expect(await resident(node)).toEqual(["llama3.2:3b", "qwen3:8b"]);
    expect(node.state().counters).toMatchObject({ loads: 2, evictions: 2 });

    const tooBig = await post(node, "/api/generate", { model: "llama3.2:3b", prompt: "x" });
    expect(tooBig.status).toBe(200);
    await tooBig.text();
    node.patch({ models: ["llama3.3:70b"] });
    const huge = await post(node, "/api/generate", { model: "llama3.3:70b", prompt: "x" });
    expect(huge.status).toBe(500);
    expect((await jsonOf(huge)).error).toMatch(/^model requires more system memory \(.+ GiB\) than is available \(12\.0 GiB\)$/);
  });

  test("a fourth model unloads one though memory has room: OLLAMA_MAX_LOADED_MODELS is 3 on a Mac by default", async () => {
    const models = ["llama3.2:1b", "llama3.2:3b", "qwen3:8b", "gemma3:4b"];
    const node = await ollamaNode({ models, loaded: models.slice(0, 3), memoryGb: 192 });
    await generate(node, "gemma3:4b");
    expect((await resident(node)).length).toBe(3);
    expect(await resident(node)).toContain("gemma3:4b");
    expect(node.state().counters).toMatchObject({ loads: 1, evictions: 1 });
    // Raised, four stay.
    const roomy = await ollamaNode({ models, loaded: models.slice(0, 3), memoryGb: 192, maxLoadedModels: 4 });
    await generate(roomy, "gemma3:4b");
    expect((await resident(roomy)).length).toBe(4);
  });

  test("a load needing the memory a busy model holds waits; the busy model goes the moment its request ends, and the load proceeds", async () => {
    const node = await ollamaNode({ models: ["qwen3:8b", "qwen2.5-coder:7b"], loaded: ["qwen3:8b"], memoryGb: 8, loadTimeMs: 100, tokensPerSecond: 50 });
    // Back and forth, so that a later look at the busy model (rather than one as its request ends) is caught at least once.
    for (const [busy, wanted] of [["qwen3:8b", "qwen2.5-coder:7b"], ["qwen2.5-coder:7b", "qwen3:8b"], ["qwen3:8b", "qwen2.5-coder:7b"]] as const) {
      const running = await streaming(node, busy, 10); // 200 ms at least
      let loaded = false;
      const load = generate(node, wanted).then((r) => ((loaded = true), r));
      await Bun.sleep(50);
      expect(loaded).toBe(false);
      expect(await resident(node)).toEqual([busy]);
      await running.end();
      expect(await resident(node)).not.toContain(busy); // gone already: the load has started
      expect((await load).load_duration).toBeGreaterThanOrEqual(80e6);
      expect(await resident(node)).toEqual([wanted]);
    }
    expect(node.state().counters).toMatchObject({ loads: 3, evictions: 3 });
  });

  test("while a load waits, a loaded model answers at once; a later load waits behind the first, though it would fit", async () => {
    const node = await ollamaNode({
      models: ["qwen3:8b", "gemma3:12b", "llama3.2:1b"],
      loaded: ["qwen3:8b"],
      memoryGb: 12, // qwen3:8b and llama3.2:1b fit together, qwen3:8b and gemma3:12b do not
      numParallel: 2,
      loadTimeMs: 50,
      tokensPerSecond: 50,
    });
    const running = await streaming(node, "qwen3:8b", 20);
    const events: string[] = [];
    const big = generate(node, "gemma3:12b").then(() => events.push("big"));
    await Bun.sleep(100);
    const small = generate(node, "llama3.2:1b").then(() => events.push("small"));
    await Bun.sleep(100);
    expect((await generate(node, "qwen3:8b")).done).toBe(true);
    events.push("served"); // before either load, which wait for qwen3:8b to go
    expect(await resident(node)).toEqual(["qwen3:8b"]);
    expect(node.state().counters.loads ?? 0).toBe(0);
    await running.end();
    events.push("ended");
    await Promise.all([big, small]);
    expect(events.slice(0, 2)).toEqual(["served", "ended"]);
    expect(await resident(node)).toEqual(["gemma3:12b", "llama3.2:1b"]);
    expect(node.state().counters).toMatchObject({ loads: 2, evictions: 1 });
  });

  test("a request that sends keep_alive to the busy model chosen to go keeps it; the load waits until that keep_alive runs out", async () => {
    const node = await ollamaNode({ models: ["qwen3:8b", "qwen2.5-coder:7b"], loaded: ["qwen3:8b"], memoryGb: 8, numParallel: 2, loadTimeMs: 50, tokensPerSecond: 50 });
    const running = await streaming(node, "qwen3:8b", 10);
    let loaded = false;
    const load = generate(node, "qwen2.5-coder:7b").then((r) => ((loaded = true), r));
    await Bun.sleep(100);
    await generate(node, "qwen3:8b", { keep_alive: "1s" });
    await running.end();
    const { models } = await jsonOf(await fetch(`${node.url}/api/ps`));
    const expires = Date.parse(models.find((m: any) => m.name === "qwen3:8b").expires_at);
    await Bun.sleep(300);
    expect(loaded).toBe(false);
    expect(await resident(node)).toEqual(["qwen3:8b"]);
    expect((await load).done).toBe(true);
    expect(Date.now()).toBeGreaterThanOrEqual(expires);
    expect(await resident(node)).toEqual(["qwen2.5-coder:7b"]);
  });

  test("a request without keep_alive leaves the runner's own: a model loaded to stay for ever stays", async () => {
    const node = await ollamaNode({ loaded: [] });
    const expiresIn = async () => Date.parse((await jsonOf(await fetch(`${node.url}/api/ps`))).models[0].expires_at) - Date.now();
    const year = 365 * 86_400_000;
    await generate(node, "qwen3:8b", { prompt: "", keep_alive: -1 });
    expect(await expiresIn()).toBeGreaterThan(100 * year);
    await generate(node, "qwen3:8b");
    expect(await expiresIn()).toBeGreaterThan(100 * year);
    await generate(node, "qwen3:8b", { keep_alive: "1h" });
    expect(await expiresIn()).toBeLessThanOrEqual(3_600_000);
  });

  test("keep_alive 0 unloads after the request; an empty request loads or unloads", async () => {
    const node = await ollamaNode({ loaded: [] });
    const ollama = client(node);
    expect((await ollama.chat({ model: "qwen3:8b", messages: [] })).done_reason).toBe("load");
    expect((await ollama.ps()).models.map((m) => m.name)).toEqual(["qwen3:8b"]);
    expect((await ollama.generate({ model: "qwen3:8b", prompt: "", keep_alive: 0 })).done_reason).toBe("unload");
    expect((await ollama.ps()).models).toEqual([]);
    await ollama.chat({ model: "llama3.2:3b", messages: ask("hi"), keep_alive: 0, options: { num_predict: 2 } });
    expect((await ollama.ps()).models).toEqual([]);
  });

  test("requests in flight are tracked until the stream ends", async () => {
    const node = await ollamaNode({ tokensPerSecond: 100 });
    const res = await post(node, "/api/chat", { model: "llama3.2:3b", messages: ask("a long answer please") });
    const reader = res.body!.getReader();
    await reader.read();
    expect(node.state()).toMatchObject({ inFlight: 1, inFlightByModel: { "llama3.2:3b": 1 } });
    while (!(await reader.read()).done);
    expect(node.state()).toMatchObject({ inFlight: 0, inFlightByModel: {} });
  });
});

describe("ollama sim as a particular Mac", () => {
  const generate = (node: SimNode, model: string, tokens: number, signal?: AbortSignal) =>
    post(node, "/api/generate", { model, prompt: "hi", stream: false, options: { num_predict: tokens } }, { signal }).then(jsonOf);

  test("numParallel: beyond N requests per model wait their turn; one that goes away gives its place back", async () => {
    const node = await ollamaNode({ tokensPerSecond: 100, numParallel: 1 });
    const began = performance.now();
    const done = await Promise.all([1, 2].map(() => generate(node, "llama3.2:3b", 10).then(() => performance.now() - began)));
    expect(Math.max(...done)).toBeGreaterThanOrEqual(190); // 10 tokens at 100/s, one after the other

    const gone = new AbortController();
    const first = generate(node, "llama3.2:3b", 10);
    const second = generate(node, "llama3.2:3b", 10, gone.signal).catch(() => "aborted");
    await Bun.sleep(30);
    expect(node.state().inFlightByModel).toEqual({ "llama3.2:3b": 2 });
    gone.abort();
    expect(await second).toBe("aborted");
    await first;
    expect(node.state().inFlightByModel).toEqual({});

    const two = await ollamaNode({ tokensPerSecond: 100, numParallel: 2 });
    const together = performance.now();
    await Promise.all([1, 2].map(() => generate(two, "llama3.2:3b", 10)));
    expect(performance.now() - together).toBeLessThan(190);
  });

  test("memoryBandwidthGbps: each model generates at the rate the bandwidth allows for its size", async () => {
    const node = await ollamaNode({ models: ["llama3.2:1b", "llama3.2:3b"], loaded: ["llama3.2:1b", "llama3.2:3b"], memoryBandwidthGbps: 200 });
    const rates: number[] = [];
    for (const name of ["llama3.2:1b", "llama3.2:3b"]) {
      const done = await generate(node, name, 8);
      rates.push(done.eval_count / (done.eval_duration / 1e9));
      const expected = decodeTokensPerSecond(catalogSpec(name)!, 200);
      expect(rates.at(-1)!).toBeGreaterThan(expected * 0.8);
      expect(rates.at(-1)!).toBeLessThan(expected * 1.2);
    }
    expect(rates[0]!).toBeGreaterThan(rates[1]! * 1.2); // 1.3 GB of weights against 1.9
  });

  test("diskGbps: a load also reads the model file, so bigger models load for longer", async () => {
    const node = await ollamaNode({ models: ["llama3.2:1b", "llama3.2:3b"], loaded: [], loadTimeMs: 10, diskGbps: 20 });
    for (const name of ["llama3.2:1b", "llama3.2:3b"]) {
      const expected = 10 + sizeBytes(catalogSpec(name)!) / 20e6;
      const done = await generate(node, name, 1);
      expect(done.load_duration / 1e6).toBeGreaterThanOrEqual(expected - 2);
      expect(done.load_duration / 1e6).toBeLessThan(expected + 60);
    }
  });
});

describe("ollama KV prompt cache", () => {
  const chat = (node: SimNode, messages: unknown[]) =>
    post(node, "/api/chat", { model: "llama3.2:3b", messages, stream: false, options: { num_predict: 5 } }).then(jsonOf);
  const long = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");

  test("a turn that resends the conversation pays prefill only for its new tokens; prompt_eval_count stays the whole prompt", async () => {
    const node = await ollamaNode({ tokensPerSecond: 100, numParallel: 2 });
    const first = await chat(node, ask(long));
    const turn = [...ask(long), first.message, { role: "user", content: "and then?" }];
    const second = await chat(node, turn);
    expect(second.prompt_eval_count).toBeGreaterThan(first.prompt_eval_count);
    expect(first.prompt_eval_duration / 1e6).toBeGreaterThanOrEqual(290); // 300+ tokens at a tenth of 10 ms each
    expect(second.prompt_eval_duration / 1e6).toBeLessThan(first.prompt_eval_duration / 1e6 / 4);
    const { promptCacheHits, cachedPromptTokens } = node.state().counters;
    expect(promptCacheHits).toBe(1);
    expect(cachedPromptTokens).toBeGreaterThanOrEqual(first.prompt_eval_count);

    // Another prompt shares only the template's role marker and pays nearly in full.
    const other = await chat(node, ask(long.replace("word0", "other")));
    expect(other.prompt_eval_duration / 1e6).toBeGreaterThanOrEqual(290);
    expect(node.state().counters.cachedPromptTokens! - cachedPromptTokens!).toBe(1);
  });

  test("the cache goes with the runner: a reloaded model starts cold", async () => {
    const node = await ollamaNode({ tokensPerSecond: 100 });
    await chat(node, ask(long));
    node.patch({ loaded: [] });
    const again = await chat(node, ask(long));
    expect(again.prompt_eval_duration / 1e6).toBeGreaterThanOrEqual(290);
    expect(node.state().counters.promptCacheHits ?? 0).toBe(0);
  });
});

describe("faults", () => {
  test("error500 answers with each API's own error shape", async () => {
    const node = await ollamaNode({ faults: { error500: true } });
    const native = await post(node, "/api/chat", { model: "llama3.2:3b", messages: ask("hi") });
    expect(native.status).toBe(500);
    expect((await jsonOf(native)).error).toContain("model runner has unexpectedly stopped");
    const compat = await post(node, "/v1/chat/completions", { model: "llama3.2:3b", messages: ask("hi") });
    expect(compat.status).toBe(500);
    expect((await jsonOf(compat)).error.type).toBe("api_error");
    node.setFaults({});
    expect((await fetch(`${node.url}/api/tags`)).status).toBe(200);
  });

  test("hang accepts and never answers; stop() still returns", async () => {
    const node = await ollamaNode({ faults: { hang: true } });
    const hung = fetch(`${node.url}/api/tags`, { signal: AbortSignal.timeout(200) });
    await expect(hung).rejects.toMatchObject({ name: "TimeoutError" });
    await hung.catch(() => {});
    const pending = fetch(`${node.url}/api/version`).catch((e: Error) => e);
    await Bun.sleep(20);
    expect(node.state().counters.hung).toBe(2);
    await node.stop();
    expect(await pending).toBeInstanceOf(Error);
  });

  test("dieAfterTokens truncates a stream: N tokens, no final chunk, connection dropped", async () => {
    const node = await ollamaNode({ faults: { dieAfterTokens: 3 } });
    const ndjson = await readUntilEnd(await post(node, "/api/chat", { model: "llama3.2:3b", messages: ask("hello") }));
    expect(ndjson.dropped).toBe(true);
    const lines = ndjson.text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines.every((l) => l.done === false)).toBe(true);

    const sse = await readUntilEnd(await post(node, "/v1/chat/completions", { model: "llama3.2:3b", stream: true, messages: ask("hello") }));
    expect(sse.dropped).toBe(true);
    expect(sse.text.split("\n\n").filter(Boolean)).toHaveLength(3);
    expect(sse.text).not.toContain("[DONE]");

    // not streaming: no response at all
    await expect(post(node, "/api/chat", { model: "llama3.2:3b", stream: false, messages: ask("hello") })).rejects.toThrow();
    expect(node.state().counters.dropped).toBeGreaterThanOrEqual(2);
  });

  test("firstByteDelayMs and tokenDelayMs slow things down", async () => {
    const node = await ollamaNode({ faults: { firstByteDelayMs: 300 } });
    let t0 = performance.now();
    await fetch(`${node.url}/api/version`);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);

    node.setFaults({ tokenDelayMs: 40 });
    t0 = performance.now();
    await client(node).generate({ model: "llama3.2:3b", prompt: "hi", options: { num_predict: 8 } });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
  });

  test("GET/POST /_sim drive a node at runtime", async () => {
    const node = await ollamaNode();
    const control = (body: unknown) => post(node, "/_sim", body);

    expect(await (await control({ faults: { error500: true } })).json()).toMatchObject({ faults: { error500: true } });
    expect((await fetch(`${node.url}/api/tags`)).status).toBe(500);
    await control({ faults: {} });
    expect((await fetch(`${node.url}/api/tags`)).status).toBe(200);

    const patched = await (await control({ models: ["gpt-oss:20b", "llama3.2:1b"], loaded: ["gpt-oss:20b"], tokensPerSecond: 800 })).json();
    expect(patched).toMatchObject({ id: "test-node", kind: "ollama", tokensPerSecond: 800, models: ["gpt-oss:20b", "llama3.2:1b"], loaded: ["gpt-oss:20b"] });
    expect((await client(node).ps()).models.map((m) => m.name)).toEqual(["gpt-oss:20b"]);

    const rejected = await control({ faults: { explode: true } });
    expect(rejected.status).toBe(400);
    expect(await jsonOf(rejected)).toEqual({ error: 'unknown fault "explode"' });
    expect((await control({ loaded: ["qwen3:8b"] })).status).toBe(400); // not on disk
    const state = await jsonOf(await fetch(`${node.url}/_sim`));
    expect(state).toMatchObject({ faults: {}, loaded: ["gpt-oss:20b"], inFlight: 0 });
    expect(state.counters).toMatchObject({ requests: 3, errors: 1 }); // /_sim itself is not counted
  });
});

describe("mlx_lm.server sim", () => {
  test("openai client: completions, streaming, and prompt-cache reuse in usage", async () => {
    const ai = openai(await mlxNode());
    const first = await ai.chat.completions.create({ model: "default_model", messages: [{ role: "user", content: "Explain KV caches" }] });
    expect(first.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(first.choices[0]!.finish_reason).toBe("stop");
    const answer = first.choices[0]!.message.content!;
    expect((first.choices[0]!.message as unknown as { reasoning: string }).reasoning).toContain("Explain KV caches");
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);

    // The next turn repeats the conversation so far: its prefix is cached.
    const second = await ai.chat.completions.create({
      model: "mlx-community/Qwen3-8B-4bit",
      messages: [
        { role: "user", content: "Explain KV caches" },
        { role: "assistant", content: answer },
        { role: "user", content: "Shorter please" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 5,
    });
    let finish: string | null = null;
    let usage;
    for await (const chunk of second) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(finish).toBe("length");
    expect(usage!.completion_tokens).toBe(5);
    expect(usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
    expect(usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(usage!.prompt_tokens);

    const text = await ai.completions.create({ model: "default_model", prompt: "Once upon a time", max_tokens: 4 });
    expect(text.object).toBe("text_completion");
    expect(text.choices[0]!.text.length).toBeGreaterThan(0);
  });

  test("bytes are Python's json.dumps; SSE ends with data: [DONE]", async () => {
    const node = await mlxNode();
    const res = await post(node, "/v1/chat/completions", {
      stream: true,
      max_tokens: 7,
      chat_template_kwargs: { enable_thinking: false },
      messages: ask("café"),
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const body = await res.text();
    // While the prompt is processed, keepalive comments (processed/total); then the chunks.
    expect(body).toMatch(/^(: keepalive \d+\/\d+\n\n)+(data: \{"id": "chatcmpl-[^\n]+\n\n)+data: \[DONE\]\n\n$/);
    const progress = [...body.matchAll(/^: keepalive (\d+)\/(\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
    const total = progress[0]![1]!;
    expect(progress).toEqual([[0, total], [total - 1, total], [total, total]]);
    expect(body).toContain("caf\\u00e9");
    const frames = body.split("\n\n").filter((f) => f.startsWith("data: {")).map((f) => JSON.parse(f.slice(6)));
    expect(frames.at(-1).choices[0]).toEqual({ index: 0, finish_reason: "length", delta: { role: "assistant" } });

    expect(await (await fetch(`${node.url}/health`)).text()).toBe(`{"status": "ok"}`);
    expect(await (await fetch(`${node.url}/v1/models`)).json()).toMatchObject({ object: "list", data: [{ id: "mlx-community/Qwen3-8B-4bit", object: "model" }] });
    const missing = await post(node, "/v1/chat/completions", { model: "other/model", messages: ask("x") });
    expect(missing.status).toBe(404);
    // 0.32.0 tries to load the model asked for: a repo the hub does not have is its 404.
    const { error } = await jsonOf(missing);
    expect(error).toStartWith("404 Client Error.");
    expect(error).toContain("Repository Not Found for url: https://huggingface.co/api/models/other/model/revision/main.");
  });

  test("tool calls carry a uuid and Python-encoded arguments", async () => {
    const ai = openai(await mlxNode());
    const res = await ai.chat.completions.create({
      model: "default_model",
      messages: [{ role: "user", content: "sim: call get_weather" }],
      tools: [weather as OpenAI.ChatCompletionTool],
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(res.choices[0]!.finish_reason).toBe("tool_calls");
    const call = res.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(call.function.arguments).toBe(`{"city": "example city", "unit": "celsius"}`);
    // A whole message with no text: content null in 0.32.0; left out in 0.31.2.
    expect(res.choices[0]!.message.content).toBeNull();
    const older = await startSimMlx({ id: "older", version: "0.31.2", model: "mlx-community/Qwen3-8B-4bit" });
    started.push(older);
    const olderAnswer = await jsonOf(await post(older, "/v1/chat/completions", { messages: ask("hi"), max_tokens: 0 }));
    expect(olderAnswer.choices[0].message).toEqual({ role: "assistant" });
    expect((await jsonOf(await post(await mlxNode(), "/v1/chat/completions", { messages: ask("hi"), max_tokens: 0 }))).choices[0].message).toEqual({ role: "assistant", content: null });
  });

  test("HTTP/1.0 as Python's http.server speaks it: one answer a connection, ended by the close; only a whole completion has a Content-Length", async () => {
    const node = await mlxNode();
    const health = await rawExchange(node.port, "GET /health HTTP/1.1\r\nHost: sim\r\nConnection: keep-alive\r\n\r\n");
    expect(health).toMatch(/^HTTP\/1\.0 200 OK\r\nServer: BaseHTTP\/0\.6 Python\/3\.\d+\.\d+\r\nDate: \w{3}, \d\d \w{3} \d{4} [\d:]{8} GMT\r\n/);
    expect(health).toEndWith(`\r\n\r\n{"status": "ok"}`);
    expect(health.toLowerCase()).not.toContain("content-length");

    const body = (stream: boolean) => JSON.stringify({ stream, max_tokens: 4, messages: ask("hi") });
    const request = (stream: boolean) => `POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: ${body(stream).length}\r\n\r\n${body(stream)}`;
    const streamed = await rawExchange(node.port, request(true));
    const [head, sse] = streamed.split("\r\n\r\n") as [string, string];
    expect(head).toStartWith("HTTP/1.0 200 OK\r\n");
    expect(head.toLowerCase()).not.toMatch(/content-length|transfer-encoding/);
    expect(sse).toEndWith("data: [DONE]\n\n");
    const whole = await rawExchange(node.port, request(false));
    const [wholeHead, json] = whole.split("\r\n\r\n") as [string, string];
    expect(wholeHead).toContain(`\r\nContent-Length: ${json.length}`);
    expect(JSON.parse(json).object).toBe("chat.completion");

    // herd's own HTTP/1.1 client reads both framings.
    for (const stream of [true, false]) {
      const answer = await postJson(new URL("/v1/chat/completions", node.url), body(stream), AbortSignal.timeout(5000));
      expect(answer.status).toBe(200);
      const text = new TextDecoder().decode(await readCapped(answer.body, { bytes: 2 ** 20, setting: "server.maxNodeAnswerMb" }));
      if (stream) expect(text).toEndWith("data: [DONE]\n\n");
      else expect(JSON.parse(text).choices[0].finish_reason).toBe("length");
    }
  });

  test("faults apply to mlx too", async () => {
    const node = await mlxNode({ error500: true });
    const failed = await post(node, "/v1/chat/completions", { messages: ask("hi") });
    expect(failed.status).toBe(500);
    expect((await jsonOf(failed)).error).toStartWith("[metal::malloc]");
    node.setFaults({ dieAfterTokens: 2 });
    // An HTTP/1.0 stream ends at the close, a dropped one too: what is missing is its end (the last chunk, [DONE]).
    const cut = await readUntilEnd(await post(node, "/v1/chat/completions", { stream: true, messages: ask("hi") }));
    expect(cut.text.split("\n\n").filter((f) => f.startsWith("data:"))).toHaveLength(2);
    expect(cut.text).not.toContain("[DONE]");
  });
});

describe("demoFleet", () => {
  test("varied nodes whose loaded models are on disk and fit in memory", async () => {
    const fleet = demoFleet(7);
    expect(new Set(fleet.map((n) => n.id)).size).toBe(7);
    expect(fleet[0]).toMatchObject({ id: "sim-studio", memoryGb: 192 });
    const everywhere = new Set(fleet.flatMap((n) => n.models as string[]));
    for (const m of ["llama3.2:3b", "qwen3:8b", "qwen2.5-coder:7b", "nomic-embed-text", "gpt-oss:20b"]) expect(everywhere).toContain(m);
    for (const spec of fleet.slice(0, 5)) {
      const node = await startSimOllama({ ...spec, loadTimeMs: 0 });
      started.push(node);
      expect(node.state().loaded).toHaveLength(spec.loaded!.length);
      expect(node.state().usedGb!).toBeLessThanOrEqual(spec.memoryGb!);
    }
  });
});
