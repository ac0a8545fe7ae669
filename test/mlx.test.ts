// Routing to MLX servers through a real `herd` (router + node agent "n1"),
// whose agent runs three stand-in mlx_lm.servers (test/fixtures/fake-mlx-lm-server.ts),
// started with --max-tokens 5 so that a cap herd fails to send shows, next to an Ollama
// node the router polls. The official OpenAI, Ollama and
// Anthropic clients get answers from MLX models; admission control, the wall
// clock and the MLX queue entries are driven by slowing the "slow" server down
// through its /_sim control surface.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { ROOT, cleanupFile, eventually, freePorts, getJson, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

const FAKE = join(ROOT, "test/fixtures/fake-mlx-lm-server.ts");
const CHAT = "mlx-community/Llama-3.2-3B-Instruct-4bit";
const SLOW = "mlx-community/Mistral-7B-Instruct-v0.3-4bit";
const THINKER = "mlx-community/Qwen3-4B-4bit";
const QUEUE = `n1:mlx:${SLOW}`;

let ollamaNode: SimNode;
let url: string;
let herd: Awaited<ReturnType<typeof startRouterProcess>>;
let slowPort: number;
let openai: OpenAI;
let anthropic: Anthropic;

// Real processes on a machine that may be busy: generous bounds (every wait below is bounded too).
setDefaultTimeout(30_000);
afterAll(cleanupFile);

beforeAll(async () => {
  ollamaNode = await startSimOllama({ id: "o", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] });
  const [chatPort, port, thinkerPort] = await freePorts(3);
  slowPort = port!;
  const dir = tmpDir();
  // The models' config.json in a Hugging Face cache, where the node agent reads their trained context.
  const hub = join(dir, "hub");
  cachedConfig(hub, CHAT, { max_position_embeddings: 131072 });
  // A context the prompt all but fills (a vision-language model's, nested): room for one token.
  cachedConfig(hub, THINKER, { text_config: { max_position_embeddings: 1 } });
  const file = join(dir, "herd.config.ts");
  writeFileSync(
    file,
    `export default {
      nodes: [
        { id: "o", ollama: "${ollamaNode.url}" },
        { id: "n1", mlxCommand: ${JSON.stringify([process.execPath, FAKE, "--max-tokens", "5"])}, mlx: [{ model: "${CHAT}", port: ${chatPort} }, { model: "${SLOW}", port: ${slowPort} }, { model: "${THINKER}", port: ${thinkerPort} }] },
      ],
      heartbeat: { intervalMs: 200, timeoutMs: 1000, offlineMs: 3000 },
      mlx: { maxQueueDepth: 1, maxInFlightPerModel: 1, wallClockTimeoutMs: 4000, retryAfterSeconds: 7 },
    };\n`,
  );
  herd = await startRouterProcess(["--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--node-id", "n1"], { env: { HF_HUB_CACHE: hub } });
  url = herd.url;
  await eventually(async () => {
    const nodes = (await getJson(`${url}/fleet/status`)).nodes;
    const n1 = nodes.find((n: any) => n.node_id === "n1");
    return nodes.every((n: any) => n.status === "online") && n1?.mlx_servers.length === 3 && n1.mlx_servers.every((s: any) => s.status === "healthy");
  }, 20000, "the MLX servers healthy");
  openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 });
});

afterAll(async () => {
  await herd?.stop();
  await ollamaNode?.stop();
});

const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const slowFaults = (faults: Record<string, number>) =>
  fetch(`http://127.0.0.1:${slowPort}/_sim`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ faults }) });
const slowQueue = async () => (await getJson(`${url}/fleet/queue`)).queues[QUEUE];

function expectMlxHeaders(headers: Headers, model = CHAT) {
  expect(headers.get("x-fleet-backend")).toBe("mlx");
  expect(headers.get("x-fleet-node")).toBe("n1");
  expect(headers.get("x-fleet-served-model")).toBe(`mlx:${model}`);
}

describe("the fleet's models", () => {
  test("/api/tags and /v1/models list the MLX models, with their node, beside Ollama's; models.retrieve() finds one by its name, slash and all", async () => {
    const tags = (await getJson(`${url}/api/tags`)).models;
    expect(tags.find((m: any) => m.name === `mlx:${CHAT}`)?.details.fleet_nodes).toEqual(["n1"]);
    expect(tags.find((m: any) => m.name === "llama3.2:3b")?.details.fleet_nodes).toEqual(["o"]);
    const models = (await getJson(`${url}/v1/models`)).data;
    expect(models.find((m: any) => m.id === `mlx:${SLOW}`)?.owned_by).toBe("mlx");
    expect(models.find((m: any) => m.id === "llama3.2:3b")?.owned_by).toBe("ollama");
    // openai-node writes the slash as %2F; a client that does not, as it is.
    expect(await openai.models.retrieve(`mlx:${SLOW}`)).toEqual(models.find((m: any) => m.id === `mlx:${SLOW}`));
    expect((await getJson(`${url}/v1/models/mlx:${SLOW}`)).id).toBe(`mlx:${SLOW}`);
  });

  test("/api/ps lists the MLX servers' models too: always resident, on their node", async () => {
    const loaded = (await getJson(`${url}/api/ps`)).models;
    const mlx = loaded.find((m: any) => m.name === `mlx:${CHAT}`);
    // Its context: the trained one its node agent read from the model's config.json.
    expect(mlx).toMatchObject({ model: `mlx:${CHAT}`, fleet_node: "n1", digest: "", context_length: 131072 });
    expect(mlx.size_vram).toBe(mlx.size);
    const tagged = (await getJson(`${url}/api/tags`)).models.filter((m: any) => m.name.startsWith("mlx:")).map((m: any) => m.name);
    expect(loaded.filter((m: any) => m.name.startsWith("mlx:")).map((m: any) => m.name).sort()).toEqual(tagged.sort());
  });
});

describe("the heartbeat's MLX servers", () => {
  test("every field is bounded (a heartbeat is untrusted input): a refusal names the field, and nothing of it is kept", async () => {
    const server = { port: 11440, model: "org/m", status: "loading" };
    const refusal = async (over: Record<string, unknown>) => {
      const res = await post("/heartbeat", { node_id: "bogus", mlx_servers: [{ ...server, ...over }] });
      return [res.status, ((await res.json()) as any).error];
    };
    expect(await refusal({ context_length: 2 ** 24 + 1 })).toEqual([400, expect.stringContaining("mlx_servers[0].context_length")]);
    expect(await refusal({ context_length: 0.5 })).toEqual([400, expect.stringContaining("mlx_servers[0].context_length")]);
    expect(await refusal({ status_reason: "x".repeat(2001) })).toEqual([400, expect.stringContaining("mlx_servers[0].status_reason")]);
    expect(await refusal({ port: 70000 })).toEqual([400, expect.stringContaining("mlx_servers[0].port")]);
    expect(await refusal({ model: "m".repeat(1025) })).toEqual([400, expect.stringContaining("mlx_servers[0].model")]);
    expect((await getJson(`${url}/fleet/status`)).nodes.map((n: any) => n.node_id)).not.toContain("bogus");
  });
});

describe("every surface answers from an MLX server", () => {
  test("OpenAI: a whole answer and a stream say the same, by the mlx: name or the bare repo id", async () => {
    const messages = [{ role: "user" as const, content: "Tell me about prompt caches" }];
    const { data, response } = await openai.chat.completions.create({ model: `mlx:${CHAT}`, messages }).withResponse();
    expectMlxHeaders(response.headers);
    const text = data.choices[0]!.message.content!;
    expect(text).toContain("prompt caches");
    expect(data.choices[0]!.finish_reason).toBe("stop");
    expect(data.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(data.usage!.completion_tokens).toBeGreaterThan(3);

    const { data: stream, response: streamed } = await openai.chat.completions.create({ model: CHAT, messages, stream: true, stream_options: { include_usage: true } }).withResponse();
    expectMlxHeaders(streamed.headers);
    let streamedText = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      streamedText += chunk.choices[0]?.delta.content ?? "";
      usage ??= chunk.usage;
    }
    expect(streamedText).toBe(text);
    expect(usage?.completion_tokens).toBe(data.usage!.completion_tokens);
    // MLX gives counts, no durations: the stream's first-to-last-chunk time is its decode time (the whole answer tells none).
    const learned = await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1").speeds[`mlx:${CHAT}`], 3000, "the stream's decode rate");
    expect(learned.samples.decode).toBe(1);
    expect(learned.decode_tps).toBeGreaterThan(0);
  });

  test("a reply the client did not cap may run to the model's context: herd sends the room the prompt leaves (mlx_lm's own default cuts at --max-tokens), a client's cap as it is", async () => {
    const status = (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1");
    const contexts = Object.fromEntries(status.mlx_servers.map((s: any) => [s.model, s.context_length]));
    expect(contexts).toEqual({ [CHAT]: 131072, [SLOW]: null, [THINKER]: 1 });
    const ollama = new Ollama({ host: url });
    const whole = await ollama.chat({ model: `mlx:${CHAT}`, messages: [{ role: "user", content: "Explain batching" }], stream: false });
    expect(whole.done_reason).toBe("stop");
    expect(whole.eval_count).toBeGreaterThan(5);
    const capped = await anthropic.messages.create({ model: `mlx:${CHAT}`, max_tokens: 3, messages: [{ role: "user", content: "Explain batching" }] });
    expect(capped).toMatchObject({ stop_reason: "max_tokens", usage: { output_tokens: 3 } });
    const full = await ollama.chat({ model: `mlx:${THINKER}`, messages: [{ role: "user", content: "Explain batching" }], think: false, stream: false });
    expect(full).toMatchObject({ done_reason: "length", eval_count: 1 });
  });

  test("Ollama: chat (whole and streamed) and generate", async () => {
    const ollama = new Ollama({ host: url });
    const whole = await ollama.chat({ model: `mlx:${CHAT}`, messages: [{ role: "user", content: "Explain batching" }], stream: false });
    expect(whole.message.content).toContain("batching");
    expect(whole.done).toBe(true);
    expect(whole.eval_count).toBeGreaterThan(3);
    let streamed = "";
    let last: { done: boolean; eval_count?: number } | undefined;
    for await (const part of await ollama.chat({ model: `mlx:${CHAT}`, messages: [{ role: "user", content: "Explain batching" }], stream: true })) {
      streamed += part.message.content;
      last = part;
    }
    expect(streamed).toBe(whole.message.content);
    expect(last).toMatchObject({ done: true, eval_count: whole.eval_count });
    const generated = await ollama.generate({ model: `mlx:${CHAT}`, prompt: "Explain batching", stream: false });
    expect(generated.response).toBe(whole.message.content); // a prompt is one user message
  });

  test("OpenAI's legacy completions: a prompt completes as Ollama's generate does, whole and streamed", async () => {
    const generated = await new Ollama({ host: url }).generate({ model: `mlx:${CHAT}`, prompt: "Explain batching", stream: false });
    const { data: whole, response } = await openai.completions.create({ model: `mlx:${CHAT}`, prompt: "Explain batching" }).withResponse();
    expectMlxHeaders(response.headers);
    expect({ text: whole.choices[0]!.text, finish: whole.choices[0]!.finish_reason, tokens: whole.usage!.completion_tokens }).toEqual({ text: generated.response!, finish: "stop", tokens: generated.eval_count });
    let streamed = "";
    for await (const chunk of await openai.completions.create({ model: `mlx:${CHAT}`, prompt: "Explain batching", stream: true })) streamed += chunk.choices[0]?.text ?? "";
    expect(streamed).toBe(generated.response!);
  });

  test("Anthropic: a Message, a stream, and a tool call, with the fleet headers", async () => {
    const { data, response } = await anthropic.messages
      .create({ model: `mlx:${CHAT}`, max_tokens: 300, messages: [{ role: "user", content: "Tell me about latency" }] })
      .withResponse();
    expectMlxHeaders(response.headers);
    expect(data).toMatchObject({ type: "message", role: "assistant", model: `mlx:${CHAT}`, stop_reason: "end_turn" });
    const text = data.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    expect(text).toContain("latency");
    expect(data.usage.output_tokens).toBeGreaterThan(3);

    const final = await anthropic.messages.stream({ model: `mlx:${CHAT}`, max_tokens: 300, messages: [{ role: "user", content: "Tell me about latency" }] }).finalMessage();
    expect(final.content.map((b) => (b.type === "text" ? b.text : "")).join("")).toBe(text);

    const weather: Anthropic.Tool = { name: "get_weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
    const call = await anthropic.messages.create({ model: `mlx:${CHAT}`, max_tokens: 300, tools: [weather], messages: [{ role: "user", content: "sim: call get_weather" }] });
    expect(call.stop_reason).toBe("tool_use");
    const use = call.content.find((b) => b.type === "tool_use");
    expect(use).toMatchObject({ type: "tool_use", name: "get_weather" });
    expect(typeof (use as Anthropic.ToolUseBlock).input).toBe("object");
  });

  test("Anthropic thinking on an MLX model: disabled switches a thinking model's reasoning off (enable_thinking), adaptive leaves it to the model", async () => {
    const ask = (thinking: Anthropic.ThinkingConfigParam) =>
      anthropic.messages.create({ model: `mlx:${THINKER}`, max_tokens: 300, thinking, messages: [{ role: "user", content: "Tell me about latency" }] });
    expect((await ask({ type: "disabled" })).content.map((b) => b.type)).toEqual(["text"]);
    expect((await ask({ type: "adaptive" })).content.map((b) => b.type)).toEqual(["thinking", "text"]);
  });

  test("Responses: an mlx: model answers Codex's API too", async () => {
    const { data, response } = await openai.responses.create({ model: `mlx:${CHAT}`, input: "Tell me about queues" }).withResponse();
    expectMlxHeaders(response.headers);
    expect(data.output_text).toContain("queues");
  });

  test("what an MLX server cannot do, or an MLX model nobody runs, is said in the surface's format", async () => {
    const embed = await post("/api/embed", { model: `mlx:${CHAT}`, input: "hi" });
    expect(embed.status).toBe(400);
    expect(((await embed.json()) as any).error).toContain("does not embed");
    const image = await post("/api/chat", { model: `mlx:${CHAT}`, messages: [{ role: "user", content: "what is this", images: ["aGk="] }], stream: false });
    expect(image.status).toBe(400);
    expect(((await image.json()) as any).error).toContain("messages[0].images: mlx_lm.server reads text only");
    const missing = await anthropic.messages.create({ model: "mlx:org/nobody-runs-this", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.message).toContain("add it to a node's mlx servers");
  });

  test("POST /fleet/pin of an mlx: model is a no-op that reports the server's health to a caller that waits", async () => {
    const res = await post("/fleet/pin", { model: `mlx:${CHAT}`, wait: true });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ ok: true, model: `mlx:${CHAT}`, pinned_node: "n1", ready: true });
    expect(body.note).toContain("always-resident");
    expect(body.per_node).toEqual({});
  });

  test("the recommendations' usage names the MLX models served as they are, with no :latest added", async () => {
    const top = await eventually(async () => {
      const r = await getJson(`${url}/dashboard/api/recommendations?refresh=1`);
      return r.usage.top_models.some((m: any) => m.model.startsWith("mlx:")) && r.usage.top_models;
    }, 5000, "the MLX requests in the recommendations");
    expect(top.map((m: any) => m.model)).toContain(`mlx:${CHAT}`);
    expect(top.filter((m: any) => m.model.startsWith("mlx:") && m.model.endsWith(":latest"))).toEqual([]);
  });
});

describe("admission control, the wall clock and the MLX queue", () => {
  test("a full MLX queue answers 503 with Retry-After (Anthropic: overloaded_error); /fleet/queue shows the MLX entry", async () => {
    await slowFaults({ tokenDelayMs: 80 });
    try {
      const ask = () => post("/v1/messages", { model: `mlx:${SLOW}`, max_tokens: 300, messages: [{ role: "user", content: "Tell me about admission" }] });
      const running = ask();
      await eventually(async () => (await slowQueue())?.in_flight === 1, 5000, "the first request running");
      const waiting = ask();
      const busy = await eventually(async () => {
        const q = await slowQueue();
        return q?.pending === 1 ? q : null;
      }, 5000, "the second request waiting");
      expect(busy).toMatchObject({ pending: 1, in_flight: 1, concurrency: 1, max_queue_depth: 1, model: `mlx:${SLOW}`, node_id: "n1", tool_repair: { attempts: 0, successes: 0, failures: 0 } });

      const refused = await ask();
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("7");
      expect(refused.headers.get("x-fleet-node")).toBe("none");
      const error = ((await refused.json()) as any).error;
      expect(error.type).toBe("overloaded_error");
      expect(error.message).toContain("mlx.maxQueueDepth");
      const viaOpenAI = await openai.chat.completions.create({ model: `mlx:${SLOW}`, messages: [{ role: "user", content: "x" }] }).catch((e) => e);
      expect(viaOpenAI).toBeInstanceOf(OpenAI.InternalServerError);
      expect(viaOpenAI.status).toBe(503);

      const [first, second] = await Promise.all([running, waiting]);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(((await second.json()) as any).content[0].text).toBe(((await first.json()) as any).content[0].text);
    } finally {
      await slowFaults({});
    }
    // The same prompt twice: the second came from the prompt cache, and the queue's stats say so.
    const q = await slowQueue();
    expect(q).toMatchObject({ pending: 0, in_flight: 0, stats_samples: 2, cold_request_pct: 0.5, warm_hit_rate: 1, cache_hit_rate: 0.5 });
    expect(q.avg_prompt_tokens).toBeGreaterThan(0);
    expect(q.avg_completion_tokens).toBeGreaterThan(3);
    expect(q.avg_latency_ms).toBeGreaterThan(0);
    const status = (await getJson(`${url}/fleet/status`)).queues[QUEUE];
    expect(status).toMatchObject({ completed: 2, failed: 0, max_queue_depth: 1, stats_samples: 2 });
  });

  test("past the wall clock: 413 with the /compact hint before the first byte; an error event once streaming; the slot is freed", async () => {
    await slowFaults({ tokenDelayMs: 300 });
    try {
      const whole = post("/v1/messages", { model: `mlx:${SLOW}`, max_tokens: 300, messages: [{ role: "user", content: "Tell me about wedged requests" }] });
      const res = await whole;
      expect(res.status).toBe(413);
      // The request reached its server: the headers name what ran it (seed 000: the X-Fleet-* set on every proxied response).
      expect([res.headers.get("x-fleet-backend"), res.headers.get("x-fleet-served-model"), res.headers.get("x-fleet-node")]).toEqual(["mlx", `mlx:${SLOW}`, expect.not.stringMatching(/^none$/)]);
      const error = ((await res.json()) as any).error;
      expect(error.type).toBe("prompt_too_large");
      expect(error.message).toContain("mlx.wallClockTimeoutMs");
      expect(error.message).toContain("run /compact");

      const streamed = await post("/api/chat", { model: `mlx:${SLOW}`, messages: [{ role: "user", content: "Tell me about wedged requests" }] });
      expect(streamed.status).toBe(200);
      const lines = (await streamed.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
      expect(lines[0].done).toBe(false);
      expect(lines.at(-1).error).toContain("run /compact");
    } finally {
      await slowFaults({});
    }
    expect(await slowQueue()).toMatchObject({ pending: 0, in_flight: 0 });
  });
});

describe("herd sim --mlx", () => {
  test("the first simulated node runs a simulated mlx_lm.server under its node agent; it answers, and stops with the sim", async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), "export default { heartbeat: { intervalMs: 200, timeoutMs: 1000, offlineMs: 3000 } };\n");
    const sim = spawnHerd(["sim", "--nodes", "1", "--base-port", "0", "--mlx", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir });
    const [, routerUrl, model] = await sim.waitFor(/MLX: curl (http:\/\/[\d.]+:\d+)\/api\/chat -d '\{"model":"(mlx:[^"]+)"/);
    const pid = Number((await sim.waitFor(/started \(pid (\d+)\): \S+ \S+ sim-mlx-server --model/))[1]);
    const answer = await eventually(async () => {
      const res = await fetch(`${routerUrl}/api/chat`, { method: "POST", body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }], stream: false }) });
      return res.status === 200 ? ((await res.json()) as any) : null;
    }, 20000, "the MLX server answering");
    expect(answer.message.content.length).toBeGreaterThan(0);
    const node = (await getJson(`${routerUrl}/fleet/status`)).nodes[0];
    expect(node).toMatchObject({ node_id: "sim-studio", source: "agent" });
    expect(node.ollama.models_available.length).toBeGreaterThan(0); // still the simulated Ollama too
    expect(await sim.stop()).toBe(0);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

function cachedConfig(hub: string, model: string, config: Record<string, unknown>): void {
  const repo = join(hub, `models--${model.replaceAll("/", "--")}`);
  mkdirSync(join(repo, "refs"), { recursive: true });
  mkdirSync(join(repo, "snapshots", "0123abcd"), { recursive: true });
  writeFileSync(join(repo, "refs", "main"), "0123abcd");
  writeFileSync(join(repo, "snapshots", "0123abcd", "config.json"), JSON.stringify(config));
}

