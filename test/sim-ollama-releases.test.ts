// The simulated Ollama behaves as the release it is given (src/fleet/ollama-releases.ts): what ollama/ollama's source
// says of parallel slots, the context a model loads with, capability checks before a load, prompts cut to the context,
// embedding failures, memory on the GPU and image generation. Black-box, through its HTTP API.
import { afterEach, describe, expect, test } from "bun:test";
import { NEWEST_OLLAMA } from "../src/fleet/ollama-releases.ts";

/** A release herd supports from before the context tiers (0.15.5): Codex's --oss wants 0.13.4 or newer. */
const BEFORE_TIERS = "0.13.5";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { decodePng } from "../src/sim/png.ts";
import { promptTokenIds } from "../src/sim/replies.ts";

const started: SimNode[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((n) => n.stop()));
});

async function node(opts: Partial<SimNodeOptions> = {}): Promise<SimNode> {
  const n = await startSimOllama({ id: "release", models: ["llama3.2:3b", "qwen3:8b", "nomic-embed-text"], loaded: [], loadTimeMs: 1, ...opts });
  started.push(n);
  return n;
}

const post = async (n: SimNode, path: string, body: unknown) => {
  const res = await fetch(`${n.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};
const ps = async (n: SimNode) => ((await (await fetch(`${n.url}/api/ps`)).json()) as { models: any[] }).models;
const contextOf = async (n: SimNode, model: string) => (await ps(n)).find((m) => m.name === model)?.context_length;
const generate = (n: SimNode, extra: Record<string, unknown> = {}) => post(n, "/api/generate", { model: "llama3.2:3b", prompt: "hi", stream: false, options: { num_predict: 4 }, ...extra });

describe("parallel slots", () => {
  test(`OLLAMA_NUM_PARALLEL unset: one request per model at a time on ${NEWEST_OLLAMA}, four on a release before 0.9.7`, async () => {
    const lengthOf = async (n: SimNode) => {
      const began = performance.now();
      await Promise.all([1, 2].map(() => post(n, "/api/generate", { model: "llama3.2:3b", prompt: "hi", stream: false, options: { num_predict: 10 } })));
      return performance.now() - began;
    };
    // 10 tokens at 100/s: ~100 ms for one, ~200 ms for two in turn.
    expect(await lengthOf(await node({ tokensPerSecond: 100, loaded: ["llama3.2:3b"] }))).toBeGreaterThanOrEqual(190);
    expect(await lengthOf(await node({ tokensPerSecond: 100, loaded: ["llama3.2:3b"], ollamaVersion: "0.9.6" }))).toBeLessThan(190);
  });
});

describe("the context a model loads with", () => {
  test("no num_ctx: 4096, 32768 or 262144 by the Mac's memory (GPU working set under 23, from 23, from 47 GiB), cut to the trained context", async () => {
    const cases: [number, number][] = [
      [16, 4096], // 10.7 GiB of GPU memory
      [32, 4096], // 21.3
      [36, 32768], // 27
      [64, 131072], // 48, cut to llama3.2's 131072
    ];
    for (const [memoryGb, expected] of cases) {
      const n = await node({ memoryGb });
      expect((await generate(n)).status).toBe(200);
      expect({ memoryGb, context: await contextOf(n, "llama3.2:3b") }).toEqual({ memoryGb, context: expected });
    }
    const qwen = await node({ memoryGb: 64 });
    await post(qwen, "/api/generate", { model: "qwen3:8b", prompt: "", stream: false });
    expect(await contextOf(qwen, "qwen3:8b")).toBe(40960);
  });

  test(`on ${BEFORE_TIERS} (before 0.15.5) the default is 4096 whatever the memory; OLLAMA_CONTEXT_LENGTH wins on any release`, async () => {
    const old = await node({ memoryGb: 192, ollamaVersion: BEFORE_TIERS });
    await generate(old);
    expect(await contextOf(old, "llama3.2:3b")).toBe(4096);
    const set = await node({ memoryGb: 192, contextLength: 16384 });
    await generate(set);
    expect(await contextOf(set, "llama3.2:3b")).toBe(16384);
  });

  test("a num_ctx past the trained context is cut to it; another num_ctx reloads the runner; two requests without one never do", async () => {
    const n = await node({ memoryGb: 64 });
    const loads = () => (n.state().counters.loads ?? 0);
    await generate(n, { options: { num_predict: 4, num_ctx: 1073741824 } });
    expect(await contextOf(n, "llama3.2:3b")).toBe(131072);
    expect(loads()).toBe(1);
    await generate(n, { options: { num_predict: 4, num_ctx: 131072 } }); // the same context once cut: kept
    expect(loads()).toBe(1);
    await generate(n, { options: { num_predict: 4, num_ctx: 8192 } });
    expect([loads(), await contextOf(n, "llama3.2:3b")]).toEqual([2, 8192]);
    await generate(n); // an explicit runner, a request without num_ctx: the default differs, so it reloads
    expect([loads(), await contextOf(n, "llama3.2:3b")]).toEqual([3, 131072]);
    await generate(n);
    await generate(n, { options: { num_predict: 4, num_ctx: 131072 } }); // what the automatic runner has: kept
    expect(loads()).toBe(3);
  });

  test("an automatic context the memory cannot hold steps down (262144 → 32768 → 4096)", async () => {
    // 64 GiB: qwen3:30b's trained 262144 tokens of KV cache alone need about as much.
    const n = await node({ memoryGb: 64, models: ["qwen3:30b"] });
    expect((await post(n, "/api/generate", { model: "qwen3:30b", prompt: "", stream: false })).status).toBe(200);
    expect(await contextOf(n, "qwen3:30b")).toBe(32768);
  });
});

describe("prompts longer than the context", () => {
  const long = Array.from({ length: 6000 }, (_, i) => `w${i}`).join(" ");

  test("cut silently to num_keep and the newest tokens, about half the context; with shift:false a 400", async () => {
    const n = await node({ memoryGb: 16 });
    const cut = await generate(n, { prompt: long });
    expect(cut.status).toBe(200);
    // 4096 − (4096 − 5) / 2: what the runner keeps of a prompt that does not fit.
    expect(cut.body.prompt_eval_count).toBe(2051);
    const refused = await generate(n, { prompt: long, shift: false });
    expect(refused).toEqual({ status: 400, body: { error: expect.stringContaining("the prompt is longer than the context length currently available to the model") } });
  });

  test("a chat loses its oldest messages first (never the system message or the last) until it fits", async () => {
    const n = await node({ memoryGb: 16 });
    const turn = Array.from({ length: 2500 }, (_, i) => `t${i}`).join(" ");
    const messages = [
      { role: "system", content: "be brief" },
      { role: "user", content: turn },
      { role: "assistant", content: turn },
      { role: "user", content: "and now?" },
    ];
    const res = await post(n, "/api/chat", { model: "llama3.2:3b", messages, stream: false, options: { num_predict: 4 } });
    // The first long turn is gone; without it the rest fits.
    expect([res.status, res.body.prompt_eval_count]).toEqual([200, promptTokenIds([messages[0]!, messages[2]!, messages[3]!]).length]);
  });
});

describe("embedding models", () => {
  test('an empty /api/generate or /api/chat cannot load one: 400 "does not support generate"; /api/embed with no input loads it', async () => {
    const n = await node();
    expect(await post(n, "/api/generate", { model: "nomic-embed-text", prompt: "" })).toEqual({ status: 400, body: { error: '"nomic-embed-text" does not support generate' } });
    expect(await post(n, "/api/chat", { model: "nomic-embed-text", messages: [] })).toEqual({ status: 400, body: { error: '"nomic-embed-text" does not support chat' } });
    expect(await ps(n)).toEqual([]);
    expect(await post(n, "/api/embed", { model: "nomic-embed-text", keep_alive: -1 })).toEqual({ status: 200, body: { model: "nomic-embed-text", embeddings: [] } });
    expect((await ps(n)).map((m) => m.name)).toEqual(["nomic-embed-text:latest"]);
  });

  test("a runner that fails under /api/embed is a 400 (Ollama answers any runner error there so); /api/generate's is a 500", async () => {
    const n = await node({ faults: { error500: true } });
    const embed = await post(n, "/api/embed", { model: "nomic-embed-text", input: "hello" });
    expect(embed).toEqual({ status: 400, body: { error: expect.stringMatching(/^do embedding request:/) } });
    expect((await generate(n)).status).toBe(500);
  });
});

describe("memory", () => {
  test("a model past Metal's working set runs partly on the CPU: /api/ps size_vram is less than size", async () => {
    // 24 GiB: 16 GiB of GPU memory for qwen3:8b (~5 GiB) and gpt-oss:20b (~13 GiB).
    const n = await node({ memoryGb: 24, models: ["qwen3:8b", "gpt-oss:20b"] });
    for (const model of ["qwen3:8b", "gpt-oss:20b"]) await post(n, "/api/generate", { model, prompt: "", stream: false });
    const [newest, first] = await ps(n);
    expect(first.name).toBe("qwen3:8b");
    expect(first.size_vram).toBe(first.size);
    expect(newest.size_vram).toBeLessThan(newest.size);
    expect(newest.size_vram).toBeGreaterThan(0);
  });
});

describe("image generation", () => {
  test("0.32.5 draws an x/ model's image as a PNG of the size asked; from 0.32.6 there is no such route", async () => {
    const draw = (n: SimNode) => fetch(`${n.url}/v1/images/generations`, { method: "POST", body: JSON.stringify({ model: "x/z-image-turbo", prompt: "a fox", size: "96x64", response_format: "b64_json" }) });
    const last = await node({ models: ["x/z-image-turbo"], ollamaVersion: "0.32.5" });
    const res = await draw(last);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(decodePng(Buffer.from(body.data[0].b64_json, "base64"))).toMatchObject({ width: 96, height: 64 });
    const gone = await draw(await node({ models: ["x/z-image-turbo"] }));
    expect([gone.status, await gone.text()]).toEqual([404, "404 page not found"]);
  });
});
