// Routing through a real router process to simulated nodes, with the official
// ollama and openai clients: where requests go, retries, failures mid-stream,
// fallbacks, errors in each surface's own format.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { eventually, fleetSet, getJson, refusedSet, standInOllama, startRouterProcess, tmpDir } from "./helpers.ts";

// Polls are rare here, so a fault injected into a node is met by a request, not by the poller first.
const SLOW_POLLS = "heartbeat: { intervalMs: 30000, timeoutMs: 60000, offlineMs: 120000 }";

const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

async function fleet(nodes: (SimNodeOptions & { parallel?: number; draining?: boolean })[], extra = "") {
  const started = await Promise.all(nodes.map((n) => startSimOllama(n)));
  sims.push(...started);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const entries = nodes.map((n, i) => JSON.stringify({ id: n.id, ollama: started[i]!.url, parallel: n.parallel ?? 4, draining: n.draining ?? false }));
  writeFileSync(file, `export default { nodes: [${entries.join(", ")}], ${SLOW_POLLS}, ${extra} };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "all nodes online");
  return { router, url: router.url, nodes: started };
}

/** A breakdown header (`name=value; name=value`) as an object. */
const headerParts = (res: Response, name: string): Record<string, number> =>
  Object.fromEntries((res.headers.get(name) ?? "").split("; ").map((p) => [p.split("=")[0], Number(p.split("=")[1])]));

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("where requests go", () => {
  test("to the node that has the model loaded, over one that only has it on disk; headers say so", async () => {
    const { url } = await fleet([
      { id: "cold", models: ["qwen3:8b"], loaded: [] },
      { id: "hot", models: ["qwen3:8b"], loaded: ["qwen3:8b"] },
    ]);
    for (let i = 0; i < 3; i++) {
      const res = await post(url, "/api/chat", { model: "qwen3:8b", messages: [{ role: "user", content: "hi" }], stream: false });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-fleet-node")).toBe("hot");
      expect(res.headers.get("x-fleet-served-model")).toBe("qwen3:8b");
      expect(res.headers.get("x-fleet-requested-model")).toBe("qwen3:8b");
      expect(res.headers.get("x-fleet-fallback")).toBe("false");
      expect(res.headers.get("x-fleet-backend")).toBe("ollama");
      expect(res.headers.get("x-fleet-retries")).toBe("0");
      expect(Number(res.headers.get("x-fleet-score"))).toBeGreaterThan(0);
      expect(((await res.json()) as any).done).toBe(true);
    }
  });

  test("ties between equal nodes are broken fairly, not by registration order", async () => {
    const opts = { models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] };
    const { url } = await fleet([{ id: "first", ...opts }, { id: "second", ...opts }]);
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false, options: { num_predict: 1 } });
      await res.json();
      served.push(res.headers.get("x-fleet-node")!);
    }
    expect(served.filter((n) => n === "first").length).toBe(2);
    expect(served.filter((n) => n === "second").length).toBe(2);
  });

  test("load spreads over equal nodes under concurrency, and each node's parallel limit is enforced", async () => {
    const opts = { models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 200, parallel: 1 };
    const { url, nodes } = await fleet([{ id: "a", ...opts }, { id: "b", ...opts }]);
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, ...nodes.map((n) => n.state().inFlight))), 5);
    const served = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "count", stream: false, options: { num_predict: 10 } });
        await res.json();
        return res.headers.get("x-fleet-node");
      }),
    );
    clearInterval(watch);
    expect(served.filter((n) => n === "a").length).toBeGreaterThanOrEqual(2);
    expect(served.filter((n) => n === "b").length).toBeGreaterThanOrEqual(2);
    expect(peak).toBe(1);
  });

  test("Ollama fields herd does not know reach the node untouched; herd's own fields do not", async () => {
    const { url, nodes } = await fleet([{ id: "only", models: ["qwen3:8b"], loaded: ["qwen3:8b"] }]);
    const res = await post(url, "/api/chat", {
      model: "qwen3:8b",
      messages: [{ role: "user", content: "hi" }],
      stream: false,
      think: false,
      keep_alive: 0,
      options: { num_predict: 3 },
      metadata: { tags: ["app-a"] },
      fallback_models: ["llama3.2:3b"],
    });
    const body = (await res.json()) as any;
    expect(body.message.thinking).toBeUndefined(); // think: false reached the node (qwen3 thinks by default)
    expect(body.done_reason).toBe("length"); // options.num_predict reached it, not raised for thinking
    await eventually(async () => nodes[0]!.state().loaded!.length === 0, 2000, "keep_alive 0 to unload the model");
  });
});

describe("when nodes fail", () => {
  test("a node failing before its first byte is routed around and counted in X-Fleet-Retries", async () => {
    const { url, nodes } = await fleet([
      { id: "bad", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] },
      { id: "good", models: ["llama3.2:3b"], loaded: [] },
    ]);
    nodes[0]!.setFaults({ error500: true });
    const res = await post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("good");
    expect(res.headers.get("x-fleet-retries")).toBe("1");
    // No zombie: the failed attempt is released on the node that failed, counted there as failed.
    const queues = (await getJson(`${url}/fleet/status`)).queues;
    expect(queues["bad:llama3.2:3b"]).toMatchObject({ in_flight: 0, failed: 1, completed: 0 });
    expect(queues["good:llama3.2:3b"]).toMatchObject({ in_flight: 0, completed: 1 });
  });

  test("X-Fleet-Retries counts retries, not failures: 1 when both nodes failed, 0 when the only one did", async () => {
    const { url, nodes } = await fleet([
      { id: "bad", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] },
      { id: "worse", models: ["llama3.2:3b"], loaded: [] },
    ]);
    for (const n of nodes) n.setFaults({ error500: true });
    const both = await post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false });
    expect([both.status, both.headers.get("x-fleet-retries")]).toEqual([503, "1"]);
    const { url: one, nodes: [only] } = await fleet([{ id: "alone", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }]);
    only!.setFaults({ error500: true });
    const single = await post(one, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false });
    expect([single.status, single.headers.get("x-fleet-retries")]).toEqual([503, "0"]);
  });

  test("a node killed mid-run is routed around at once and marked offline; a model only it has is a 503 saying so", async () => {
    const { url, nodes } = await fleet(
      [
        { id: "doomed", models: ["llama3.2:3b", "qwen3:8b"], loaded: ["llama3.2:3b"] },
        { id: "survivor", models: ["llama3.2:3b"], loaded: [] },
      ],
      "heartbeat: { intervalMs: 200, timeoutMs: 600, offlineMs: 1000 }",
    );
    const ask = async () => {
      const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "hi", stream: false });
      expect(res.status).toBe(200);
      await res.json();
      return res.headers.get("x-fleet-node");
    };
    expect(await ask()).toBe("doomed");
    await nodes[0]!.stop();
    for (let i = 0; i < 5; i++) expect(await ask()).toBe("survivor");
    await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === "doomed").status === "offline", 3000, "doomed offline");
    expect((await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === "doomed").excluded).toBe("offline");
    const orphaned = await post(url, "/api/generate", { model: "qwen3:8b", prompt: "hi", stream: false });
    expect(orphaned.status).toBe(503);
    expect(((await orphaned.json()) as { error: string }).error).toContain("qwen3:8b on doomed (offline)");
  });

  test("a node that accepts and never answers is abandoned after timeouts.firstByteMs, the request's one budget: a 503 naming it", async () => {
    const { url, nodes } = await fleet(
      [
        { id: "hangs", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] },
        { id: "works", models: ["llama3.2:3b"], loaded: [] },
      ],
      "timeouts: { firstByteMs: 400 }",
    );
    nodes[0]!.setFaults({ hang: true });
    const t0 = performance.now();
    const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "hi", stream: false });
    expect(performance.now() - t0).toBeLessThan(1200);
    expect(res.status).toBe(503);
    // The budget went to hangs: works was never tried, so there was no retry.
    expect(res.headers.get("x-fleet-retries")).toBe("0");
    expect(((await res.json()) as { error: string }).error).toMatch(/tried hangs: no answer within \d+ ms/);
  });

  test("a node dying mid-stream ends the stream with an error line (Ollama) or an error event (OpenAI), never a hang", async () => {
    const { url, nodes } = await fleet([{ id: "dies", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }]);
    nodes[0]!.setFaults({ dieAfterTokens: 3 });
    const res = await post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "tell me a story" }] });
    const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines.length).toBe(4);
    expect(lines.slice(0, 3).every((l) => l.done === false)).toBe(true);
    expect(lines[3].error).toContain("node dies");

    const client = new Ollama({ host: url });
    const consume = async () => {
      for await (const _ of await client.chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "again" }], stream: true }));
    };
    await expect(consume()).rejects.toThrow(/node dies/);

    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });
    const consumeOpenAI = async () => {
      for await (const _ of await openai.chat.completions.create({ model: "llama3.2:3b", messages: [{ role: "user", content: "x" }], stream: true }));
    };
    await expect(consumeOpenAI()).rejects.toThrow(/node dies/);
  });

  test("an idle stream past timeouts.idleMs is ended with an error", async () => {
    const { url, nodes } = await fleet([{ id: "slow", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }], "timeouts: { idleMs: 300 }");
    nodes[0]!.setFaults({ tokenDelayMs: 2000 });
    const started = Date.now();
    const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "hi" });
    const last = JSON.parse((await res.text()).trimEnd().split("\n").at(-1)!);
    expect(last.error).toContain("no whole line from the node for 300 ms");
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe("models that are not there", () => {
  test("fallback_models are tried in order, and the headers say what ran", async () => {
    const { url } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }]);
    const res = await post(url, "/api/chat", { model: "missing:70b", fallback_models: ["also-missing", "llama3.2:3b"], messages: [{ role: "user", content: "hi" }], stream: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-requested-model")).toBe("missing:70b");
    expect(res.headers.get("x-fleet-served-model")).toBe("llama3.2:3b");
    expect(res.headers.get("x-fleet-fallback")).toBe("true");
  });

  test("400, 404 and 503 say what is wrong, in each surface's format, with the fleet headers", async () => {
    const { url } = await fleet([
      { id: "up", models: ["llama3.2:3b"], loaded: [] },
      { id: "drained", models: ["qwen3:8b"], loaded: [], draining: true },
    ]);
    const noModel = await post(url, "/api/chat", { messages: [] });
    expect(noModel.status).toBe(400);
    expect(await noModel.json()).toEqual({ error: "model is required" });

    const notFound = await post(url, "/api/generate", { model: "ghost", prompt: "x" });
    expect(notFound.status).toBe(404);
    const notFoundError = ((await notFound.json()) as any).error;
    expect(notFoundError).toStartWith(`model "ghost:latest" not found on any node; the fleet has: llama3.2:3b, qwen3:8b`);
    expect(notFoundError).toContain("auto-pull: up could not pull it (pull model manifest: file does not exist)");
    expect(notFound.headers.get("x-fleet-requested-model")).toBe("ghost");
    expect(notFound.headers.get("x-fleet-retries")).toBe("0");

    const unavailable = await post(url, "/api/generate", { model: "qwen3:8b", prompt: "x" });
    expect(unavailable.status).toBe(503);
    expect(((await unavailable.json()) as any).error).toContain("qwen3:8b on drained (draining)");
    // /fleet/status says which nodes routing leaves out whatever the model, and why.
    const excluded = Object.fromEntries((await getJson(`${url}/fleet/status`)).nodes.map((n: any) => [n.node_id, n.excluded]));
    expect(excluded).toEqual({ up: null, drained: "draining" });

    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });
    // The SDK returns its own thenable, so the error is caught rather than passed to expect().rejects.
    const ghost = await openai.chat.completions.create({ model: "ghost", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(ghost).toBeInstanceOf(OpenAI.NotFoundError);
    expect(ghost.code).toBe("model_not_found");
    const busy = await openai.chat.completions.create({ model: "qwen3:8b", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(busy).toBeInstanceOf(OpenAI.APIError);
    expect(busy.status).toBe(503);
    const bad = await post(url, "/v1/chat/completions", { model: "llama3.2:3b", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain("messages[0].content[0].image_url.url");
    const notJson = await fetch(`${url}/api/chat`, { method: "POST", body: "{nope" });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as any).error).toContain("invalid JSON body");

    // Refused before routing, in each surface, the fleet headers say so: no node, no retry, the model asked for.
    const refusals: [string, unknown, string][] = [
      ["/api/chat", { model: "llama3.2:3b", stream: "yes" }, "llama3.2:3b"],
      ["/api/generate", { model: "llama3.2:3b", prompt: 5 }, "llama3.2:3b"],
      ["/api/embed", { model: "nomic-embed-text", input: 5 }, "nomic-embed-text"],
      ["/api/embeddings", { model: "nomic-embed-text", prompt: ["a", "b"] }, "nomic-embed-text"],
      ["/v1/chat/completions", { messages: [] }, "none"],
      ["/v1/chat/completions", { model: "llama3.2:3b", messages: "hi" }, "llama3.2:3b"],
      ["/v1/responses", { model: "llama3.2:3b", previous_response_id: "resp_1", input: "hi" }, "llama3.2:3b"],
    ];
    for (const [path, body, requested] of refusals) {
      const res = await post(url, path, body);
      const headers = ["x-fleet-node", "x-fleet-requested-model", "x-fleet-served-model", "x-fleet-backend", "x-fleet-fallback", "x-fleet-retries"].map((h) => res.headers.get(h));
      expect({ path, status: res.status, headers }).toEqual({ path, status: 400, headers: ["none", requested, "none", "none", "false", "0"] });
    }

    // Names that are properties of every JavaScript object are model names like any other: not found, never a 500.
    for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      const ollama = await post(url, "/api/chat", { model: name, messages: [{ role: "user", content: "x" }] });
      expect({ name, status: ollama.status }).toEqual({ name, status: 404 });
      const viaOpenai = await post(url, "/v1/chat/completions", { model: name, messages: [{ role: "user", content: "x" }] });
      expect({ name, status: viaOpenai.status }).toEqual({ name, status: 404 });
    }
  });
});

describe("the OpenAI surface", () => {
  test("chat completions: one id for the whole stream, usage on request, [DONE] at the end", async () => {
    const { url } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }]);
    const res = await post(url, "/v1/chat/completions", { model: "llama3.2:3b", messages: [{ role: "user", content: "hello" }], stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const text = await res.text();
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    const chunks = text.split("\n\n").filter((f) => f && f !== "data: [DONE]").map((f) => JSON.parse(f.replace(/^data: /, "")));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    // The first chunk is the role alone; the content follows (OpenAI's own order).
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant" });
    expect(chunks[1].choices[0].delta.content).toBeString();
    expect(chunks.at(-2).choices[0].finish_reason).toBe("stop");
    expect(chunks.at(-1).choices).toEqual([]);
    expect(chunks.at(-1).usage.completion_tokens).toBeGreaterThan(0);

    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x" });
    const done = await openai.chat.completions.create({ model: "llama3.2:3b", messages: [{ role: "user", content: "hello" }], max_tokens: 2 });
    expect(done.object).toBe("chat.completion");
    expect(done.choices[0]!.finish_reason).toBe("length");
    expect(done.usage!.completion_tokens).toBe(2);
  });

  test("tools and tool_calls round-trip, with finish_reason tool_calls", async () => {
    const { url } = await fleet([{ id: "n", models: ["qwen3:8b"], loaded: ["qwen3:8b"] }]);
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x" });
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    const first = await openai.chat.completions.create({ model: "qwen3:8b", messages: [{ role: "user", content: "sim: call get_weather" }], tools });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(first.choices[0]!.finish_reason).toBe("tool_calls");
    expect(call.type).toBe("function");
    expect(call.type === "function" && call.function.name).toBe("get_weather");
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toHaveProperty("city");

    const stream = await openai.chat.completions.create({ model: "qwen3:8b", messages: [{ role: "user", content: "sim: call get_weather" }], tools, stream: true });
    let finish: string | null = null;
    const names: string[] = [];
    for await (const chunk of stream) {
      for (const c of chunk.choices[0]?.delta.tool_calls ?? []) if (c.function?.name) names.push(c.function.name);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(names).toEqual(["get_weather"]);
    expect(finish).toBe("tool_calls");

    const second = await openai.chat.completions.create({
      model: "qwen3:8b",
      tools,
      messages: [{ role: "user", content: "sim: call get_weather" }, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "18C, sunny" }],
    });
    expect(second.choices[0]!.finish_reason).toBe("stop");
    expect(second.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  test("embeddings and models, fleet-wide", async () => {
    const { url } = await fleet([
      { id: "a", models: ["nomic-embed-text", "llama3.2:3b"], loaded: [] },
      { id: "b", models: ["qwen3:8b"], loaded: [] },
    ]);
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x" });
    const list = await openai.models.list();
    expect(list.data.map((m) => m.id)).toEqual(["llama3.2:3b", "nomic-embed-text:latest", "qwen3:8b"]);
    const emb = await openai.embeddings.create({ model: "nomic-embed-text", input: ["a", "b"] });
    expect(emb.data.length).toBe(2);
    expect(emb.data[0]!.embedding.length).toBe(768);
    const ollama = await new Ollama({ host: url }).embed({ model: "nomic-embed-text", input: "hello" });
    expect(ollama.embeddings[0]!.length).toBe(768);
  });
});

describe("queues, limits and the per-client cap", () => {
  test("/fleet/queue and /fleet/status count exactly; /fleet/limits says what the fleet absorbs", async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 100, parallel: 2 }]);
    nodes[0]!.setFaults({ firstByteDelayMs: 400 });
    const running = Array.from({ length: 5 }, () => post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false, options: { num_predict: 2 } }).then((r) => r.json()));
    const busy = await eventually(async () => {
      const q = await getJson(`${url}/fleet/queue`);
      return q.in_flight === 2 && q.pending === 3 && q;
    }, 2000, "2 running and 3 waiting");
    expect(busy.queue_depth).toBe(5);
    expect(busy.queues["n:llama3.2:3b"]).toEqual({ pending: 3, in_flight: 2, concurrency: 2, model: "llama3.2:3b", node_id: "n" });
    expect(busy.nodes_online).toBe(1);
    const limits = await getJson(`${url}/fleet/limits`);
    expect(limits.nodes.n).toMatchObject({ status: "online", parallel: 2, in_flight: 2, pending: 3 });
    expect(limits.max_retries).toBe(2);
    await Promise.all(running);
    const status = await getJson(`${url}/fleet/status`);
    expect(status.queues["n:llama3.2:3b"]).toMatchObject({ pending: 0, in_flight: 0, completed: 5, failed: 0, concurrency: 2 });
    expect(status.nodes[0].ollama.requests_active).toBe(0);
  });

  test("a client over routing.clientMaxInFlight gets 429 with Retry-After, in each surface's format", async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }], "routing: { clientMaxInFlight: 1, clientRetryAfterSeconds: 3 }");
    nodes[0]!.setFaults({ firstByteDelayMs: 500 });
    const first = post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false });
    await Bun.sleep(100);
    const second = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false });
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("3");
    expect(((await second.json()) as any).error).toContain("routing.clientMaxInFlight");
    const third = await post(url, "/v1/chat/completions", { model: "llama3.2:3b", messages: [{ role: "user", content: "x" }] });
    expect(third.status).toBe(429);
    expect(((await third.json()) as any).error.type).toBe("rate_limit_error");
    expect((await first).status).toBe(200);
    const after = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false });
    expect(after.status).toBe(200);
  });

  test("round-robin and least-connections are there for comparison; /api/show answers from a node with the model", async () => {
    const opts = { models: ["llama3.2:3b"], loaded: [] as string[] };
    const { url } = await fleet([{ id: "a", ...opts, loaded: ["llama3.2:3b"] }, { id: "b", ...opts }, { id: "c", ...opts }], `routing: { strategy: "round-robin" }`);
    const served: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false, options: { num_predict: 1 } });
      await res.json();
      served.push(res.headers.get("x-fleet-node")!);
    }
    expect(served).toEqual(["a", "b", "c", "a", "b", "c"]);
    const show = await new Ollama({ host: url }).show({ model: "llama3.2:3b" });
    expect(show.details.family).toBe("llama");
  });
});

describe("pulling models", () => {
  test("POST /api/pull streams Ollama's progress from the node with the most free memory; the model is then routable", async () => {
    const { url } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: [] }]);
    const client = new Ollama({ host: url });
    const statuses: string[] = [];
    for await (const p of await client.pull({ model: "qwen3:8b", stream: true })) statuses.push(p.status);
    expect(statuses[0]).toBe("pulling manifest");
    expect(statuses.at(-1)).toBe("success");
    expect(statuses).toContain("writing manifest");
    expect((await client.list()).models.map((m) => m.name)).toContain("qwen3:8b");
    const res = await post(url, "/api/generate", { model: "qwen3:8b", prompt: "hi", stream: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("n");
  });

  /** A router with one agent node (it reports its free memory: 10 of 16 GB), holding llama3.2:3b on disk; `beside`: agentless nodes. */
  async function smallAgentNode(beside: SimNodeOptions[] = []) {
    const { url } = await fleet(beside, `auth: { nodeToken: "fleet-token" }`);
    const small = await startSimOllama({ id: "small", models: ["llama3.2:3b"], loaded: [] });
    sims.push(small);
    const memory = { total_gb: 16, used_gb: 6, available_gb: 10, pressure: "nominal" };
    const beat = await post(url, "/heartbeat", { node_id: "small", ollama_url: small.url, memory, ollama: { models_available: ["llama3.2:3b"] } }, { authorization: "Bearer fleet-token" });
    expect(beat.status).toBe(200);
    return { url, small };
  }

  test("a model larger than every online node's free memory is a 503 with the arithmetic, and nothing is pulled", async () => {
    // An agent node (it reports its free memory), with the credential that lets it say where its Ollama is.
    const { url, small } = await smallAgentNode();
    const res = await post(url, "/api/pull", { model: "llama3.3:70b" });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'No node has enough available memory for "llama3.3:70b" (48 GB): small has 10 GB available, 38 GB short' });
    expect(fleetSet(res)).toEqual(refusedSet("llama3.3:70b"));
    const named = await post(url, "/api/pull", { model: "llama3.3:70b", node_id: "small" });
    expect(named.status).toBe(503);
    expect((await getJson(`${small.url}/api/tags`)).models.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);
    const fits = await post(url, "/api/pull", { model: "qwen3:8b", stream: false });
    expect([fits.status, await fits.json()]).toEqual([200, { status: "success" }]);
    expect(fleetSet(fits)).toEqual({ node: "small", "served-model": "qwen3:8b", "requested-model": "qwen3:8b", fallback: "false", backend: "ollama", retries: "0" });
  });

  test("the memory check judges the nodes whose memory herd knows even beside an agentless one: a model too big for the agent node goes to the other", async () => {
    const { url, small } = await smallAgentNode([{ id: "bare", models: ["llama3.2:3b"], loaded: [] }]);
    // qwen3:32b needs 23 GB: not the agent node's 10 GB free, so the node herd knows nothing of takes it.
    const big = await post(url, "/api/pull", { model: "qwen3:32b", stream: false });
    expect([big.status, big.headers.get("x-fleet-node"), await big.json()]).toEqual([200, "bare", { status: "success" }]);
    expect((await getJson(`${small.url}/api/tags`)).models.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);
    const fits = await post(url, "/api/pull", { model: "qwen3:8b", stream: false });
    expect([fits.status, fits.headers.get("x-fleet-node")]).toEqual([200, "small"]);
  });

  test("a model the catalog does not know is sized from its name: llama3.1:405b fits no node's free memory", async () => {
    const { url } = await smallAgentNode();
    const res = await post(url, "/api/pull", { model: "llama3.1:405b" });
    expect([res.status, await res.json()]).toEqual([503, { error: 'No node has enough available memory for "llama3.1:405b" (~228.7 GB, estimated from its name): small has 10 GB available, 218.7 GB short' }]);
  });

  test("auto-pull applies /api/pull's memory check: a model larger than every node's free memory is a 503 in each surface's format, not pulled", async () => {
    const { url, small } = await smallAgentNode();
    const noRoom = 'No node has enough available memory for "llama3.3:70b" (48 GB): small has 10 GB available, 38 GB short';
    const messages = [{ role: "user", content: "hi" }];

    const ollama = await post(url, "/api/chat", { model: "llama3.3:70b", messages, stream: false });
    expect([ollama.status, await ollama.json()]).toEqual([503, { error: noRoom }]);
    expect(ollama.headers.get("x-fleet-requested-model")).toBe("llama3.3:70b");
    const openai = await post(url, "/v1/chat/completions", { model: "llama3.3:70b", messages });
    expect([openai.status, await openai.json()]).toEqual([503, { error: { message: noRoom, type: "api_error", param: null, code: null } }]);
    // Strict, or Anthropic's auto-routing would serve the local model instead of pulling.
    const anthropic = await post(url, "/v1/messages", { model: "llama3.3:70b", max_tokens: 10, messages }, { "x-fleet-no-fallback": "true" });
    expect([anthropic.status, await anthropic.json()]).toEqual([503, { type: "error", error: { type: "overloaded_error", message: noRoom } }]);
    expect((await getJson(`${small.url}/api/tags`)).models.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);

    // One that fits is pulled; one of unknown size is tried, as /api/pull does (the sim has no such model).
    const fits = await post(url, "/api/generate", { model: "qwen3:8b", prompt: "hi", stream: false });
    expect([fits.status, fits.headers.get("x-fleet-node")]).toEqual([200, "small"]);
    const unknown = await post(url, "/api/generate", { model: "ghost", prompt: "hi", stream: false });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error).toContain("auto-pull: small could not pull it");
  });

  test("a request for a model no node has pulls it first when features.autoPull is on", async () => {
    const { url } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: [] }]);
    const res = await post(url, "/api/chat", { model: "qwen3:32b", messages: [{ role: "user", content: "hi" }], stream: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-served-model")).toBe("qwen3:32b");
  });

  test("400 for a model Ollama cannot pull (with the install command), 404 for an unknown node, 409 for a pull already running", async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: [] }], "features: { autoPull: false }");
    const image = await post(url, "/api/pull", { name: "z-image-turbo" });
    expect(image.status).toBe(400);
    expect(((await image.json()) as any).error).toContain("mflux");
    const noName = await post(url, "/api/pull", {});
    expect(noName.status).toBe(400);
    const badNode = await post(url, "/api/pull", { model: "qwen3:8b", node_id: "nowhere" });
    expect(badNode.status).toBe(404);
    expect(((await badNode.json()) as any).error).toContain("known nodes: n (online)");

    nodes[0]!.setFaults({ firstByteDelayMs: 600 });
    const first = post(url, "/api/pull", { model: "qwen3:8b", stream: false });
    await Bun.sleep(150);
    const second = await post(url, "/api/pull", { model: "qwen3:8b" });
    expect(second.status).toBe(409);
    expect(((await second.json()) as any).error).toContain("already being pulled onto n");
    expect(fleetSet(second)).toEqual({ node: "n", "served-model": "none", "requested-model": "qwen3:8b", fallback: "false", backend: "none", retries: "0" });
    const done = await first;
    expect(done.headers.get("x-fleet-node")).toBe("n");
    expect(await done.json()).toEqual({ status: "success" });

    const missing = await post(url, "/api/generate", { model: "gemma3:12b", prompt: "x" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error).not.toContain("auto-pull");
  });
});

describe("request adjustments", () => {
  test("a thinking model's num_predict is raised so the answer fits, with the seed's budget diagnostics", async () => {
    const { url } = await fleet([{ id: "n", models: ["qwen3:8b", "llama3.2:3b"], loaded: ["qwen3:8b"] }]);
    const res = await post(url, "/api/chat", { model: "qwen3:8b", messages: [{ role: "user", content: "hi" }], stream: false, think: true, options: { num_predict: 8 } });
    const body = (await res.json()) as any;
    expect(body.done_reason).toBe("stop"); // 8 tokens would have cut it off mid-thought
    expect(res.headers.get("x-budget-used")).toMatch(/^\d+\/1024$/);
    expect(Number(res.headers.get("x-thinking-tokens"))).toBeGreaterThan(0);
    expect(Number(res.headers.get("x-output-tokens"))).toBeGreaterThan(0);
    expect(res.headers.get("x-done-reason")).toBe("stop");
    const plain = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "hi", stream: false, options: { num_predict: 2 } });
    expect(((await plain.json()) as any).done_reason).toBe("length");
    expect(plain.headers.get("x-budget-used")).toBeNull();
  });

  test("every non-streaming answer of a thinking model carries the budget diagnostics, not only one whose cap herd raised", async () => {
    const { url } = await fleet([{ id: "n", models: ["qwen3:8b"], loaded: ["qwen3:8b"] }]);
    const diagnostics = (res: Response) => ["x-thinking-tokens", "x-output-tokens", "x-budget-used", "x-done-reason"].map((h) => res.headers.get(h));
    const chat = (extra: Record<string, unknown>) => post(url, "/api/chat", { model: "qwen3:8b", messages: [{ role: "user", content: "hi" }], think: true, ...extra });
    // A cap already generous is sent as it is; with none, Ollama's -1 (no cap) is the budget.
    const generous = await chat({ stream: false, options: { num_predict: 40000 } });
    const body = (await generous.json()) as any;
    expect(diagnostics(generous)).toEqual([expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/), `${body.eval_count}/40000`, "stop"]);
    expect(Number(generous.headers.get("x-thinking-tokens"))).toBeGreaterThan(0);
    const uncapped = await chat({ stream: false });
    expect(diagnostics(uncapped)[2]).toBe(`${((await uncapped.json()) as any).eval_count}/-1`);
    // Only a whole answer can carry them in its headers.
    const streamed = await chat({});
    await streamed.text();
    expect(diagnostics(streamed)).toEqual([null, null, null, null]);
  });
});

describe("sampling defaults", () => {
  test("an OpenAI chat that sends no temperature is sent seed 000's default, 0.7; a client's own is kept; an Ollama chat's stays the model's own", async () => {
    const seen: Record<string, unknown>[] = [];
    const node = standInOllama({
      models: ["m:1b"],
      async answer(req, path) {
        if (path !== "/api/chat") return null;
        seen.push(((await req.json()) as { options?: Record<string, unknown> }).options ?? {});
        return Response.json({ model: "m:1b", created_at: new Date().toISOString(), message: { role: "assistant", content: "hi" }, done: true, done_reason: "stop", prompt_eval_count: 1, eval_count: 1 });
      },
    });
    try {
      const dir = tmpDir();
      const file = join(dir, "herd.config.ts");
      writeFileSync(file, `export default { nodes: [{ id: "n", ollama: "http://127.0.0.1:${node.port}" }], ${SLOW_POLLS} };\n`);
      const { url } = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
      await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes[0]?.status === "online", 3000, "the node online");
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
      const messages = [{ role: "user" as const, content: "hi" }];
      await client.chat.completions.create({ model: "m:1b", messages });
      await client.chat.completions.create({ model: "m:1b", messages, temperature: 0 });
      await (await post(url, "/api/chat", { model: "m:1b", messages, stream: false })).json();
      expect(seen.map((o) => o.temperature)).toEqual([0.7, 0, undefined]);
    } finally {
      node.stop(true);
    }
  });
});

describe("the rebalancer", () => {
  // The point scorer with no queue or wait penalties: it alone would queue everything on the hot node.
  const stubborn = 'routing: { strategy: "score" }, scoring: { weights: { queueDepth: 0, waitTime: 0 } }';
  const slowHot = { id: "hot", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 40, parallel: 1 };
  const idleCold = { id: "cold", models: ["llama3.2:3b"], loaded: [] as string[], parallel: 2 };
  const burst = (url: string) =>
    Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "x", stream: false, options: { num_predict: 8 } });
        await res.json();
        return res.headers.get("x-fleet-node");
      }),
    );

  test("moves waiting requests to a node with free slots, and counts them", async () => {
    const { url } = await fleet([slowHot, idleCold], `${stubborn}, rebalancer: { intervalMs: 50, threshold: 2, maxPerCycle: 3 }`);
    const served = await burst(url);
    expect(served.filter((n) => n === "cold").length).toBeGreaterThan(0);
    const status = await getJson(`${url}/fleet/status`);
    expect(status.queues["hot:llama3.2:3b"].rebalanced).toBeGreaterThan(0);
    expect(status.queues["hot:llama3.2:3b"].failed).toBe(0);
  });

  test("without it (threshold out of reach) the same burst all waits on the hot node", async () => {
    const { url } = await fleet([slowHot, idleCold], `${stubborn}, rebalancer: { intervalMs: 50, threshold: 100 }`);
    expect(await burst(url)).toEqual(Array(6).fill("hot"));
  });
});

describe("context protection", () => {
  const ask = (url: string) =>
    post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false, options: { num_ctx: 2048 } }).then((r) => r.json());
  const loads = (node: SimNode) => node.state().counters.loads ?? 0;

  test('"strip" drops a num_ctx that fits the loaded context, so Ollama does not reload the model', async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }]);
    const before = loads(nodes[0]!);
    await ask(url);
    await ask(url);
    expect(loads(nodes[0]!)).toBe(before);
  });

  test('"passthrough" sends it on, and the model is reloaded', async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }], `features: { contextProtection: "passthrough" }`);
    const before = loads(nodes[0]!);
    await ask(url);
    expect(loads(nodes[0]!)).toBe(before + 1);
  });
});

describe("traces", () => {
  test("every request leaves a trace whose status says what really happened", async () => {
    const { url, nodes } = await fleet([{ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 50 }], 'routing: { strategy: "score" }');
    const ok = await post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], metadata: { tags: ["app-x"] } }, { "X-Herd-Tags": "team-y" });
    await ok.text();

    nodes[0]!.setFaults({ dieAfterTokens: 2 });
    await (await post(url, "/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "story" }] })).text();
    nodes[0]!.setFaults({});

    const gone = await post(url, "/api/generate", { model: "llama3.2:3b", prompt: "a long one", options: { num_predict: 200 } });
    const reader = gone.body!.getReader();
    await reader.read();
    await reader.cancel();

    const missing = await post(url, "/api/chat", { model: "ghost", messages: [] });
    await missing.text();

    const traces = await eventually(async () => {
      const t = (await getJson(`${url}/dashboard/api/traces?limit=10`)).traces;
      return t.length === 4 && t;
    }, 3000, "four traces");
    const byStatus = Object.fromEntries(traces.map((t: any) => [t.status, t]));
    expect(Object.keys(byStatus).sort()).toEqual(["client_disconnected", "completed", "failed"]);
    expect(traces.filter((t: any) => t.status === "failed").length).toBe(2);
    const completed = byStatus.completed;
    expect(completed).toMatchObject({ node_id: "n", model: "llama3.2:3b", original_format: "ollama", retry_count: 0 });
    expect(completed.tags.sort()).toEqual(["app-x", "team-y"]);
    expect(completed.completion_tokens).toBeGreaterThan(0);
    expect(completed.time_to_first_token_ms).toBeGreaterThan(0);
    expect(completed.scores_breakdown.model_thermal).toBe(50);
    // The point scorer predicts no finish.
    expect([completed.predicted_ms, completed.prediction_breakdown]).toEqual([null, null]);
    expect(traces.some((t: any) => t.status === "failed" && /failed mid-stream|closed the stream/.test(t.error_message))).toBe(true);
    expect(traces.some((t: any) => t.status === "failed" && t.error_message.includes("not found on any node"))).toBe(true);
  });
});

describe('routing.strategy "finish-time" (the default)', () => {
  const ask = (url: string, model: string, numPredict = 8) =>
    post(url, "/api/generate", { model, prompt: "count to ten", stream: false, options: { num_predict: numPredict } }).then(async (res) => {
      await res.json();
      return res;
    });

  test("an agentless fleet: a model loaded nowhere goes to the node its first answers showed to be fastest, not the first idle one", async () => {
    const models = ["llama3.2:3b", "qwen3:32b"];
    const { url } = await fleet([
      { id: "a-small", models: [...models, "llama3.2:1b"], loaded: ["llama3.2:1b"], memoryBandwidthGbps: 100, parallel: 4 },
      { id: "b-big", models, loaded: ["llama3.2:3b"], memoryBandwidthGbps: 800, parallel: 1 },
    ]);
    // Nothing is known at first; one answer from each node teaches herd its speed. With nothing learned, the next
    // would go to a-small, the node with more slots.
    const first = [await ask(url, "llama3.2:1b"), await ask(url, "llama3.2:3b")].map((r) => r.headers.get("x-fleet-node"));
    expect(first).toEqual(["a-small", "b-big"]);

    const res = await ask(url, "qwen3:32b");
    expect(res.headers.get("x-fleet-node")).toBe("b-big");
    // The prediction is the expected finish in ms, and its parts.
    const parts = headerParts(res, "x-fleet-prediction-breakdown");
    expect(Object.keys(parts)).toEqual(["wait_ms", "load_ms", "reload_ms", "evict_ms", "prefill_ms", "decode_ms"]);
    expect(parts.load_ms).toBeGreaterThan(0);
    expect(Number(res.headers.get("x-fleet-predicted-ms"))).toBeCloseTo(Object.values(parts).reduce((a, b) => a + b, 0), -1);
    const traces = await eventually(async () => {
      const t = (await getJson(`${url}/dashboard/api/traces?limit=10`)).traces;
      return t.length === 3 && t;
    }, 3000, "three traces");
    expect(traces.find((t: any) => t.model === "qwen3:32b").prediction_breakdown).toMatchObject({ wait_ms: 0, evict_ms: 0 });
  });

  test("X-Fleet-Score keeps seed 000's meaning (an integer, higher = better fit, its parts the reference's keys); the prediction has a header and trace field of its own", async () => {
    const { url } = await fleet([{ id: "n", models: ["llama3.2:3b", "qwen3:8b"], loaded: ["llama3.2:3b"] }]);
    const hot = await ask(url, "llama3.2:3b");
    const cold = await ask(url, "qwen3:8b");
    const REFERENCE_KEYS = ["model_thermal", "memory_fit", "queue_depth", "wait_time", "role_affinity"];
    for (const res of [hot, cold]) {
      expect(res.headers.get("x-fleet-score")).toMatch(/^\d+$/);
      const points = headerParts(res, "x-fleet-score-breakdown");
      expect(Object.keys(points)).toEqual(REFERENCE_KEYS);
      expect(100 + Object.values(points).reduce((a, b) => a + b, 0)).toBeCloseTo(Number(res.headers.get("x-fleet-score")), 0);
      expect(res.headers.get("x-fleet-predicted-ms")).toMatch(/^\d+$/);
    }
    // Loaded, idle, alone: nothing in its way. A load first fits worse, and the load is where the points went.
    expect(hot.headers.get("x-fleet-score")).toBe("100");
    expect(Number(cold.headers.get("x-fleet-score"))).toBeLessThan(100);
    expect(headerParts(cold, "x-fleet-score-breakdown").model_thermal).toBeLessThan(0);
    expect(headerParts(cold, "x-fleet-prediction-breakdown").load_ms).toBeGreaterThan(0);
    const traces = await eventually(async () => {
      const t = (await getJson(`${url}/dashboard/api/traces?limit=10`)).traces;
      return t.length === 2 && t;
    }, 3000, "two traces");
    for (const res of [hot, cold]) {
      const row = traces.find((t: any) => t.model === res.headers.get("x-fleet-served-model"));
      expect(row.score).toBe(Number(res.headers.get("x-fleet-score")));
      expect(Object.keys(row.scores_breakdown)).toEqual(REFERENCE_KEYS);
      expect(Math.round(row.predicted_ms)).toBe(Number(res.headers.get("x-fleet-predicted-ms")));
      expect(row.prediction_breakdown).toEqual(headerParts(res, "x-fleet-prediction-breakdown"));
    }
  });

  test("a hot node's queue spills to a cold load elsewhere once that finishes sooner, loading one second replica", async () => {
    const { url, nodes } = await fleet([
      { id: "hot", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 20, parallel: 1 },
      { id: "cold", models: ["llama3.2:3b"], loaded: [], tokensPerSecond: 20, parallel: 1 },
    ]);
    const served = await Promise.all(Array.from({ length: 6 }, async () => (await ask(url, "llama3.2:3b", 20)).headers.get("x-fleet-node")));
    expect(served.filter((n) => n === "hot").length).toBeGreaterThanOrEqual(2);
    expect(served.filter((n) => n === "cold").length).toBeGreaterThanOrEqual(2);
    expect(nodes[1]!.state().counters.loads).toBe(1);
  });
});
