// The real openai-node client (the `openai` package) against a real router and a simulated node
// it polls, on the routes of OpenAI's API that scripts and older tools call beside chat: every
// answer in the shapes the client's types declare. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, standInOllama, startRouterProcess, tmpDir } from "./helpers.ts";

let node: SimNode;
/** A node whose one model fills in the middle: it keeps each /api/generate body it is sent. */
let filler: ReturnType<typeof standInOllama>;
const generated: any[] = [];
let url: string;
let openai: OpenAI;

afterAll(async () => {
  await node?.stop();
  await filler?.stop(true);
  await cleanupFile();
});

beforeAll(async () => {
  node = await startSimOllama({ id: "a", models: ["llama3.2:3b", "qwen3:8b", "nomic-embed-text"], loaded: ["llama3.2:3b"] });
  filler = standInOllama({
    models: ["fim:1b"],
    async answer(req, path) {
      if (path !== "/api/generate") return null;
      generated.push(await req.json());
      return Response.json({ model: "fim:1b", created_at: new Date().toISOString(), response: "\n    c = a + b\n", done: true, done_reason: "stop", prompt_eval_count: 9, eval_count: 2 });
    },
  });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const nodes = [{ id: "a", ollama: node.url }, { id: "fim", ollama: `http://127.0.0.1:${filler.port}` }];
  writeFileSync(file, `export default { nodes: ${JSON.stringify(nodes)}, heartbeat: { intervalMs: 200 } };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  url = router.url;
  await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.filter((n: any) => n.status === "online" && n.ollama?.reachable).length === 2, 8000, "both nodes online");
  openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
});

describe("openai-node against the fleet", () => {
  test("models.retrieve(): the model as /v1/models lists it, its id as asked (no tag is :latest); an unknown one is a 404 model_not_found", async () => {
    const listed = (await openai.models.list()).data;
    const entry = (id: string) => listed.find((m) => m.id === id);
    expect(await openai.models.retrieve("llama3.2:3b")).toEqual(entry("llama3.2:3b")!);
    expect(await openai.models.retrieve("nomic-embed-text")).toEqual({ ...entry("nomic-embed-text:latest")!, id: "nomic-embed-text" });
    const missing = await openai.models.retrieve("no-such-model:1b").catch((e) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect({ status: missing.status, code: missing.code, message: missing.error.message }).toEqual({
      status: 404,
      code: "model_not_found",
      message: 'model "no-such-model:1b" not found on any node',
    });
  });

  test("completions.create(): whole, and streamed as text_completion chunks ending in usage, say the same; the fleet's headers and a trace row as for a chat", async () => {
    const prompt = "Why is the sky blue?";
    const { data: whole, response } = await openai.completions.create({ model: "qwen3:8b", prompt, max_tokens: 200 }).withResponse();
    expect({ object: whole.object, model: whole.model, index: whole.choices[0]!.index, finish: whole.choices[0]!.finish_reason }).toEqual({ object: "text_completion", model: "qwen3:8b", index: 0, finish: "stop" });
    expect(whole.id).toMatch(/^cmpl-/);
    expect(whole.choices[0]!.text).toMatch(/\w/);
    const usage = whole.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    const fleet = (headers: Headers) => ["x-fleet-node", "x-fleet-backend", "x-fleet-served-model", "x-fleet-requested-model"].map((h) => headers.get(h));
    expect(fleet(response.headers)).toEqual(["a", "ollama", "qwen3:8b", "qwen3:8b"]);

    const { data: stream, response: streamed } = await openai.completions.create({ model: "qwen3:8b", prompt, max_tokens: 200, stream: true, stream_options: { include_usage: true } }).withResponse();
    expect(streamed.headers.get("content-type")).toStartWith("text/event-stream");
    expect(fleet(streamed.headers)).toEqual(["a", "ollama", "qwen3:8b", "qwen3:8b"]);
    const chunks: OpenAI.Completion[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => `${c.id} ${c.object} ${c.model}`))).toEqual(new Set([`${chunks[0]!.id} text_completion qwen3:8b`]));
    expect(chunks.map((c) => c.choices.map((choice) => choice.text).join("")).join("")).toBe(whole.choices[0]!.text);
    const [finished, last] = chunks.slice(-2);
    expect(chunks.slice(0, -2).every((c) => c.choices[0]!.finish_reason === null && !c.usage)).toBe(true);
    expect({ finish: finished!.choices[0]!.finish_reason, choices: last!.choices, usage: last!.usage }).toEqual({ finish: "stop", choices: [], usage });

    const rows = async () => ((await getJson(`${url}/dashboard/api/traces?limit=10`)).traces as any[]).filter((t) => t.model === "qwen3:8b");
    const traced = await eventually(async () => (await rows()).length === 2 && rows(), 3000, "both trace rows");
    const row = ["openai", "a", "completed", usage.completion_tokens];
    expect(traced.map((t) => [t.original_format, t.node_id, t.status, t.completion_tokens])).toEqual([row, row]);
  });

  test("completions: a raw stream ends with data: [DONE]; a cap ends in length; suffix reaches the node; a bad field is a 400 naming it", async () => {
    const post = (body: unknown) => fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const raw = await (await post({ model: "llama3.2:3b", prompt: "Count to ten", stream: true })).text();
    expect(raw.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(raw).not.toContain('"usage"');
    const cut = await openai.completions.create({ model: "llama3.2:3b", prompt: ["Count to ten"], max_tokens: 2 });
    expect({ finish: cut.choices[0]!.finish_reason, tokens: cut.usage!.completion_tokens }).toEqual({ finish: "length", tokens: 2 });
    const echoed = await openai.completions.create({ model: "llama3.2:3b", prompt: "Count to ten", max_tokens: 2, echo: true });
    expect(echoed.choices[0]!.text).toBe(`Count to ten${cut.choices[0]!.text}`);
    const filled = await openai.completions.create({ model: "fim:1b", prompt: "def add(a, b):", suffix: "    return c", max_tokens: 2 });
    expect(filled.choices[0]!.text).toBe("\n    c = a + b\n");
    expect(generated.at(-1)).toMatchObject({ model: "fim:1b", prompt: "def add(a, b):", suffix: "    return c", options: { num_predict: 2 }, stream: false });
    const refused = async (body: Record<string, unknown>) => {
      const res = await post({ model: "llama3.2:3b", prompt: "hi", ...body });
      return [res.status, ((await res.json()) as any).error];
    };
    expect(await refused({ prompt: ["a", "b"] })).toEqual([400, expect.objectContaining({ type: "invalid_request_error", message: expect.stringContaining("prompt: ") })]);
    expect(await refused({ prompt: undefined })).toEqual([400, expect.objectContaining({ message: expect.stringContaining("prompt: ") })]);
    expect(await refused({ suffix: 3 })).toEqual([400, expect.objectContaining({ message: "suffix: expected a string" })]);
    expect(await refused({ temperature: "hot" })).toEqual([400, expect.objectContaining({ message: expect.stringContaining("temperature") })]);
    const missing = await openai.completions.create({ model: "no-such-model:1b", prompt: "hi" }).catch((e) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
  });
});
