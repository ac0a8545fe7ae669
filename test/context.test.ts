// Context management for coding agents: a long session whose tool results
// outgrow the model's loaded context gets its oldest tool results cleared
// (the trace says so), and a prompt still over the router's cap is refused with
// the /compact hint — through the official Anthropic SDK.
import { describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, onCleanup, startRouterProcess, tmpDir } from "./helpers.ts";

async function router(extra = "") {
  // llama3.2:3b is loaded with a 4096-token context, as Ollama's default on a 16 GB Mac.
  const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], memoryGb: 16 });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "n", ollama: "${sim.url}" }], ${extra} };\n`);
  const r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${r.url}/api/ps`)).models.length === 1, 3000, "the loaded model");
  return { url: r.url, client: new Anthropic({ baseURL: r.url, apiKey: "unused", maxRetries: 0 }), stop: () => sim.stop() };
}

/** A session of `turns` tool calls, each returning a file of `lines` lines (300: about 2,700 tokens). */
function longSession(turns: number, lines = 300): Anthropic.MessageParam[] {
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "read the files and summarise them" }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: `toolu_${i}`, name: "Read", input: { path: `src/file${i}.ts` } }] });
    const file = Array.from({ length: lines }, (_, line) => `export const value${i}_${line} = ${line};`).join("\n");
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: file }] });
  }
  return messages;
}

const tools: Anthropic.Tool[] = [{ name: "Read", description: "read a file", input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }];

describe("context management", () => {
  test("the oldest tool results are cleared to fit the router's cap, the newest kept, and the trace says what was cleared (then num_ctx is sized)", async () => {
    const { url, client, stop } = await router("anthropic: { maxPromptTokens: 12000 }");
    const reply = await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, tools, messages: longSession(8) });
    expect(reply.stop_reason).toBe("end_turn");
    const trace = await eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace");
    expect(trace.adjustments).toEqual([
      expect.stringMatching(/^cleared the \d oldest tool result\(s\) \(\d+ → \d+ tokens\) to fit 12000$/),
      expect.stringMatching(/^num_ctx 16384: the prompt \(~\d+ tokens\)/),
    ]);
    await stop();
  });

  test("a model trained for less than the conversation: old tool results cleared to fit it, and a 413 naming its context when that is not enough", async () => {
    // Not a catalog model: the sim gives it an 8192-token trained context (/api/show model_info), and loads it at 4096 (a 16 GB Mac).
    const sim = await startSimOllama({ id: "n", models: ["smallctx:3b"], loaded: ["smallctx:3b"], tokensPerSecond: 5000, memoryGb: 16 });
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${sim.url}" }] };\n`);
    const r = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${r.url}/api/ps`)).models.length === 1, 3000, "the loaded model");
    const client = new Anthropic({ baseURL: r.url, apiKey: "unused", maxRetries: 0 });

    expect((await client.messages.create({ model: "smallctx:3b", max_tokens: 256, tools, messages: longSession(8, 150) })).stop_reason).toBe("end_turn");
    const trace = await eventually(async () => (await getJson(`${r.url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace");
    expect(trace.adjustments[0]).toMatch(/^cleared the \d oldest tool result\(s\) \(\d+ → \d+ tokens\) to fit 7936$/);

    const big = Array.from({ length: 2000 }, (_, i) => `line ${i} of a very long question`).join("\n");
    const error = await client.messages.create({ model: "smallctx:3b", max_tokens: 256, messages: [{ role: "user", content: big }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.status).toBe(413);
    expect(error.error.error.type).toBe("prompt_too_large");
    expect(error.message).toContain("over what smallctx:3b can take (8192-token context, less room for the reply)");
    await sim.stop();
  });

  test("one tool result too big alone is cleared too (force all), newest or not, and the trace says so", async () => {
    const { url, client, stop } = await router("anthropic: { maxPromptTokens: 12000 }");
    // Two results, so both are among the newest three; the last is about 18,000 tokens.
    const messages = [...longSession(1), ...longSession(2, 2000).slice(3)];
    const reply = await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, tools, messages });
    expect(reply.stop_reason).toBe("end_turn");
    const trace = await eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace");
    expect(trace.adjustments[0]).toMatch(/^cleared \d of the 2 newest \(force all: still too long without them\) \(\d+ → \d+ tokens\) to fit 12000$/);
    await stop();
  });

  test("a prompt still over anthropic.maxPromptTokens with every tool result cleared is refused with 413 and the /compact hint", async () => {
    const { client, stop } = await router("anthropic: { maxPromptTokens: 3000 }");
    // The question alone is over the cap: no clearing can make it fit.
    const question = Array.from({ length: 600 }, (_, i) => `line ${i} of a very long question`).join("\n");
    const messages: Anthropic.MessageParam[] = [...longSession(4), { role: "assistant", content: "Read them." }, { role: "user", content: question }];
    const error = await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, tools, messages }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.status).toBe(413);
    expect(error.error.error.type).toBe("prompt_too_large");
    expect(error.message).toContain("/compact");
    await stop();
  });
});

/** A node's Ollama behind a recorder: every /api/chat body the node is sent; with `failChats`, each chat gets Ollama's 500. */
function recordingNode(ollama: string) {
  const node = { chats: [] as any[], failChats: false, url: "" };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const { pathname, search } = new URL(req.url);
      const body = req.method === "POST" ? await req.text() : undefined;
      if (pathname === "/api/chat") {
        node.chats.push(JSON.parse(body!));
        if (node.failChats) return Response.json({ error: "model runner has unexpectedly stopped" }, { status: 500 });
      }
      return fetch(`${ollama}${pathname}${search}`, { method: req.method, headers: req.headers, body });
    },
  });
  onCleanup({ run: () => server.stop(true) });
  node.url = server.url.href.replace(/\/$/, "");
  return node;
}

describe("compaction by summary", () => {
  /** `auth`: config text after the anthropic section; `key`: a client key to read the router with, when it has clients. */
  async function summarisingRouter(auth = "", key?: string) {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 5000, memoryGb: 16 });
    onCleanup({ run: () => sim.stop() });
    const node = recordingNode(sim.url);
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${node.url}" }], anthropic: { maxPromptTokens: 3000 }${auth} };\n`);
    const r = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    const headers = key ? { authorization: `Bearer ${key}` } : undefined;
    await eventually(async () => ((await (await fetch(`${r.url}/api/ps`, { headers })).json()) as any).models?.length === 1, 3000, "the loaded model");
    return { url: r.url, node, client: new Anthropic({ baseURL: r.url, apiKey: "unused", maxRetries: 0 }) };
  }

  /** Four long old exchanges (about 4,400 tokens, no tool results to clear), then a short recent one and the question. */
  const paragraph = (i: number) => Array.from({ length: 60 }, (_, line) => `point ${i}.${line}: the queue drains before the node restarts`).join("\n");
  const recent: Anthropic.MessageParam[] = [
    { role: "assistant", content: "The last change is in." },
    { role: "user", content: "what is left to do?" },
  ];
  const conversation: Anthropic.MessageParam[] = [
    ...Array.from({ length: 4 }, (_, i): Anthropic.MessageParam[] => [
      { role: "user", content: `question ${i}\n${paragraph(i)}` },
      { role: "assistant", content: `answer ${i}\n${paragraph(i + 10)}` },
    ]).flat(),
    ...recent,
  ];

  test("a conversation over anthropic.maxPromptTokens with no tool result to clear: its oldest turns are summarised by the model, the recent ones kept verbatim, and the trace says so", async () => {
    const { url, node, client } = await summarisingRouter();
    const reply = await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, system: "You are a careful assistant.", messages: conversation });
    expect(reply.stop_reason).toBe("end_turn");

    // First the summary, asked of the fleet with its reply capped; then the conversation with the summary in place of its oldest turns.
    expect(node.chats).toHaveLength(2);
    const [ask, served] = node.chats;
    expect(ask.model).toBe("llama3.2:3b");
    expect(ask.options.num_predict).toBe(512);
    expect(ask.messages.at(-1).content).toContain("question 0");
    const summarised = served.messages.findIndex((m: any) => m.content.startsWith("[herd summarised"));
    expect(served.messages[0]).toEqual({ role: "system", content: "You are a careful assistant." });
    expect(summarised).toBe(1);
    expect(served.messages[1].role).toBe("user");
    expect(served.messages.slice(-2)).toEqual(recent);
    expect(served.messages.map((m: any) => m.content).join("\n")).not.toContain("point 0.1:");

    // The simulator's summary is stable: the same conversation is compacted the same way again.
    await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, system: "You are a careful assistant.", messages: conversation });
    expect(node.chats[3].messages).toEqual(served.messages);

    const traces: any[] = await eventually(async () => ((await getJson(`${url}/dashboard/api/traces?limit=4`)).traces as any[]).filter((t) => t.status === "completed").length === 4 && (await getJson(`${url}/dashboard/api/traces?limit=4`)).traces, 3000, "the traces");
    // The client's request came in before the summary it caused: told apart by the summary's tag, not by time.
    const outer = traces.find((t) => !t.tags.includes("herd:compaction"));
    const summary = traces.find((t) => t.tags.includes("herd:compaction"));
    expect(outer.adjustments[0]).toMatch(/^summarised the \d+ oldest messages with llama3.2:3b \(\d+ → \d+ tokens\) to fit 3000$/);
    expect(summary.tags).toContain("herd:compaction");
  });

  test("a summariser that fails leaves the client the 413 as before, saying what was tried", async () => {
    const { node, client } = await summarisingRouter();
    node.failChats = true;
    const error = await client.messages.create({ model: "llama3.2:3b", max_tokens: 256, messages: conversation }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.status).toBe(413);
    expect(error.error.error.type).toBe("prompt_too_large");
    expect(error.message).toContain("over this router's limit of 3000 (anthropic.maxPromptTokens)");
    expect(error.message).toMatch(/summarising the \d+ oldest messages with llama3.2:3b failed/);
    expect(error.message).toContain("/compact");
    expect(node.chats.length).toBeGreaterThan(0); // the summary was asked for
  });

  test("a key over its rate, or asking for a model it may not use, is refused before any summary is asked of a model", async () => {
    const auth = `, auth: { clients: [{ name: "once", key: "key-once", rateLimit: { requestsPerMinute: 1 } }, { name: "other", key: "key-other", models: ["qwen3:*"] }] }`;
    const { url, node } = await summarisingRouter(auth, "key-other");
    const as = (key: string) => new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
    // The key's one request of the minute, short: nothing to summarise.
    await as("key-once").messages.create({ model: "llama3.2:3b", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    const chatsBefore = node.chats.length;
    const overRate = await as("key-once").messages.create({ model: "llama3.2:3b", max_tokens: 256, messages: conversation }).catch((e) => e);
    expect(overRate.status).toBe(429);
    const denied = await as("key-other").messages.create({ model: "llama3.2:3b", max_tokens: 256, messages: conversation }).catch((e) => e);
    expect(denied.status).toBe(403);
    expect(node.chats.length).toBe(chatsBefore); // no summary was asked of the node for either
  });

  test("a summary is the key's too: it takes from the key's per-minute budget, and a key with no budget left for it gets the 413 that says why", async () => {
    const auth = `, auth: { clients: [{ name: "two", key: "key-two", rateLimit: { requestsPerMinute: 2 } }, { name: "one", key: "key-one", rateLimit: { requestsPerMinute: 1 } }] }`;
    const { url } = await summarisingRouter(auth, "key-two");
    const as = (key: string) => new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
    // The request and its summary: the two of the minute.
    expect((await as("key-two").messages.create({ model: "llama3.2:3b", max_tokens: 256, messages: conversation })).stop_reason).toBe("end_turn");
    const next = await as("key-two").messages.create({ model: "llama3.2:3b", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
    expect(next.status).toBe(429);
    const noRoom = await as("key-one").messages.create({ model: "llama3.2:3b", max_tokens: 256, messages: conversation }).catch((e) => e);
    expect(noRoom.status).toBe(413);
    expect(noRoom.message).toContain(`failed (key \\"one\\" is over its limit of 1 requests per minute`);
  });
});

describe("the context a prompt runs in", () => {
  // ~11k tokens, as Claude Code's system prompt and tool list.
  const longPrompt = Array.from({ length: 1100 }, (_, i) => `rule ${i}: keep the build green and the change small`).join("\n");
  const chat = (url: string, content: string) =>
    fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content }] }) }).then((r) => r.json() as Promise<any>);
  const loadedContext = async (simUrl: string) => (await getJson(`${simUrl}/api/ps`)).models[0].context_length;

  test("a prompt larger than the loaded context gets a num_ctx it fits (the trace says so), not Ollama's silent cut; the runner is kept after", async () => {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 5000, memoryGb: 16 });
    const direct = await chat(sim.url, longPrompt);
    expect(direct.prompt_eval_count).toBeLessThan(4096); // what Ollama does to it unasked: most of it is gone
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${sim.url}" }], heartbeat: { intervalMs: 200 } };\n`);
    const { url } = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${url}/api/ps`)).models.length === 1, 3000, "the loaded model");

    const res = await fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content: longPrompt }] }) });
    expect(res.headers.get("x-fleet-context-overflow")).toBeNull(); // it no longer overflows
    const routed = (await res.json()) as any;
    expect(routed.prompt_eval_count).toBeGreaterThan(10_000);
    expect(await loadedContext(sim.url)).toBe(16384);
    const trace = await eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace");
    expect(trace.adjustments).toEqual([expect.stringMatching(/^num_ctx 16384: the prompt \(~\d+ tokens\) and room for the reply \(1024\) outgrow the loaded context \(4096\)$/)]);

    // A short request next keeps the bigger runner (herd sends its num_ctx) instead of reloading the model at 4096.
    await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes[0].ollama.models_loaded[0]?.context_length === 16384, 3000, "herd seeing the bigger runner");
    expect((await chat(url, "hi")).done).toBe(true);
    expect(await loadedContext(sim.url)).toBe(16384);
    await sim.stop();
  });

  test("once the model has answered, a prompt herd's estimate says outgrows the runner but the node's own count says fits is sent without a num_ctx raise: no reload", async () => {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 5000, memoryGb: 16 });
    onCleanup({ run: () => sim.stop() });
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${sim.url}" }], heartbeat: { intervalMs: 200 } };\n`);
    const { url } = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${url}/api/ps`)).models.length === 1, 3000, "the loaded model");
    // Long words: ~7.7 characters a word, which the sim counts as a token each, herd's estimate as ~1.9.
    const prose = (words: number) => Array.from({ length: words }, (_, i) => ["routing", "learns", "speeds", "between", "unlike", "machines", "quickly"][i % 7]).join(" ");
    for (let i = 0; i < 3; i++) expect((await chat(url, prose(300))).prompt_eval_count).toBeGreaterThan(290);

    const document = prose(1770); // ~3,400 tokens by the estimate: with 1,024 for the reply, over 4096; ~1,800 by the node's count
    const answered = await chat(url, document);
    expect(answered.prompt_eval_count).toBeGreaterThan(1770); // all of it evaluated: not cut
    expect(await loadedContext(sim.url)).toBe(4096);
    expect(sim.state().counters.loads ?? 0).toBe(0);
    const trace = await eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace");
    expect(trace.adjustments).toEqual([]);
  });

  test("a short request sent before any report has seen the bigger runner keeps it too: herd knows the num_ctx it sent", async () => {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 5000, memoryGb: 16 });
    const dir = tmpDir();
    // One poll at start, the next a minute later: only herd's own dispatch can tell it the runner grew.
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${sim.url}" }], heartbeat: { intervalMs: 60000, timeoutMs: 120000, offlineMs: 180000 } };\n`);
    const { url } = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${url}/api/ps`)).models.length === 1, 3000, "the loaded model");

    const long = chat(url, longPrompt);
    await Bun.sleep(20); // the long prompt is at the node, its runner reloading at 16384
    expect((await chat(url, "hi")).done).toBe(true);
    expect((await long).done).toBe(true);
    expect(await loadedContext(sim.url)).toBe(16384);
    expect(sim.state().counters.loads).toBe(1); // the one reload the long prompt needs, not one back to 4096
    await sim.stop();
  });
  /** A router over one agentless sim node whose memory the config declares, as an owner would. */
  async function declared(sim: { url: string }, memoryGb: number) {
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "n", ollama: "${sim.url}", hardware: { memoryGb: ${memoryGb} } }], heartbeat: { intervalMs: 200 } };\n`);
    const r = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${r.url}/fleet/status`)).nodes[0].status === "online", 3000, "the node online");
    return r.url;
  }
  const lastTrace = async (url: string) => (await eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=1`)).traces[0], 3000, "the trace")) as any;

  test("on a 64 GB Mac the context Ollama picks itself (its 262144, cut to the model's 131072) is kept: no num_ctx, and the conversation grows without a reload", async () => {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: [], tokensPerSecond: 5000, memoryGb: 64 });
    onCleanup({ run: () => sim.stop() });
    const url = await declared(sim, 64);
    expect((await getJson(`${url}/fleet/status`)).nodes[0].capacity).toMatchObject({ default_context: 262144, sources: { default_context: "release" } });
    // ~5,000 words, the cold prompt: herd used to send num_ctx 16384.
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
    expect((await chat(url, words(5000))).done).toBe(true);
    expect(await loadedContext(sim.url)).toBe(131072);
    expect((await lastTrace(url)).adjustments).toEqual([]);
    await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes[0].ollama.models_loaded[0]?.context_length === 131072, 3000, "herd seeing the runner");
    expect((await chat(url, words(20_000))).prompt_eval_count).toBeGreaterThan(20_000);
    expect(sim.state().counters.loads).toBe(1);
  });

  test("never past the model's trained context: a client's num_ctx is cut to it, and a prompt that does not fit even there says X-Fleet-Context-Overflow", async () => {
    const sim = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: [], tokensPerSecond: 200_000, memoryGb: 16 });
    onCleanup({ run: () => sim.stop() });
    const url = await declared(sim, 16);
    const send = (content: string, options: Record<string, unknown> = {}) =>
      fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content }], options }) });
    const asked = await send("hi", { num_ctx: 1073741824 });
    expect(asked.status).toBe(200);
    expect((await lastTrace(url)).adjustments).toContain("num_ctx 1073741824 cut to the model's trained context (131072)");

    // ~150,000 tokens for a model trained for 131072: Ollama cuts it, and the client is told.
    const huge = Array.from({ length: 150_000 }, (_, i) => `w${i}`).join(" ");
    const res = await send(huge);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-context-overflow")).toMatch(/^estimated_tokens=\d{6}; context_length=131072$/);
    expect(((await res.json()) as any).prompt_eval_count).toBeLessThan(131072);
    expect(await loadedContext(sim.url)).toBe(131072);
  });

  test("routing prices the reload: a prompt that outgrows one node's runner goes to the node whose runner already fits it", async () => {
    const opts = { models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], tokensPerSecond: 5000, memoryGb: 16 };
    // Both alike and idle; by name the small one would win a tie.
    const small = await startSimOllama({ id: "a-small", ...opts });
    const big = await startSimOllama({ id: "b-big", ...opts });
    onCleanup({ run: () => small.stop() });
    onCleanup({ run: () => big.stop() });
    // b-big's runner at 16384, as a client's num_ctx leaves it; a-small's at Ollama's default 4096.
    await fetch(`${big.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content: "hi" }], options: { num_ctx: 16384 } }) });
    const dir = tmpDir();
    const nodes = [small, big].map((sim, i) => `{ id: "${["a-small", "b-big"][i]}", ollama: "${sim.url}" }`).join(", ");
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [${nodes}], heartbeat: { intervalMs: 60000, timeoutMs: 120000, offlineMs: 180000 } };\n`);
    const { url } = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    const contexts = async () => Object.fromEntries((await getJson(`${url}/fleet/status`)).nodes.map((n: any) => [n.node_id, n.ollama?.models_loaded[0]?.context_length]));
    await eventually(async () => { const c = await contexts(); return c["b-big"] === 16384 && c["a-small"] === 4096; }, 3000, "both runners seen");

    // ~6,000 tokens: with the reply's room it outgrows 4096, not 16384.
    const prompt = Array.from({ length: 460 }, (_, i) => `rule ${i}: keep the build green and the change small`).join("\n");
    const ask = () => fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content: prompt }] }) });
    const parts = (res: Response) => Object.fromEntries(res.headers.get("x-fleet-prediction-breakdown")!.split("; ").map((p) => p.split("=")));
    const res = await ask();
    expect(res.headers.get("x-fleet-node")).toBe("b-big");
    expect(parts(res).reload_ms).toBe("0");
    expect(((await res.json()) as any).done).toBe(true);
    expect(small.state().counters.loads ?? 0).toBe(0);

    // With b-big gone, a-small serves it, and its estimate named the reload it costs there.
    await big.stop();
    const there = await ask();
    expect(there.headers.get("x-fleet-node")).toBe("a-small");
    expect(Number(parts(there).reload_ms)).toBeGreaterThan(0);
    expect(parts(there).load_ms).toBe("0");
    expect(((await there.json()) as any).done).toBe(true);
    expect(await loadedContext(small.url)).toBe(8192);
  });
});

describe("the Anthropic surface's key", () => {
  test("with anthropic.apiKey set, a wrong or missing x-api-key is a 401 authentication_error; the right one works", async () => {
    const { url, stop } = await router(`anthropic: { apiKey: "sk-herd-test" }`);
    const ask = (apiKey: string) => new Anthropic({ baseURL: url, apiKey, maxRetries: 0 }).messages.create({ model: "llama3.2:3b", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    const wrong = await ask("nope").catch((e) => e);
    expect(wrong).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(wrong.error.error.type).toBe("authentication_error");
    expect(JSON.stringify(wrong.error)).not.toContain("sk-herd-test");
    expect((await ask("sk-herd-test")).stop_reason).toBeDefined();
    await stop();
  });
});
