// The real ollama-js client (the `ollama` package) against a real router and two simulated nodes
// with overlapping models: node "a" polled by the router (agentless), node "b" reported by a
// `herd node` agent, so both ways a node's models reach the router are covered. Every call a
// client makes must answer in the shapes the client's types declare. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import pkg from "../package.json" with { type: "json" };
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

// ollama-js 0.6.4 (node_modules/ollama/dist/browser.d.ts): ModelResponse and ModelDetails, every field required.
// list() and ps() both return ModelResponse; real Ollama's /api/tags sends all but expires_at and size_vram,
// its /api/ps all but modified_at, plus context_length.
const MODEL_RESPONSE = { name: "string", modified_at: "time", model: "string", size: "number", digest: "digest", details: "object", expires_at: "time", size_vram: "number" } as const;
const MODEL_DETAILS = { parent_model: "string", format: "string", family: "string", families: "strings", parameter_size: "string", quantization_level: "string" } as const;
const { expires_at: _e, size_vram: _s, ...TAGS_ENTRY } = MODEL_RESPONSE;
const { modified_at: _m, ...loaded } = MODEL_RESPONSE;
const PS_ENTRY = { ...loaded, context_length: "number" } as const;

type Kind = "string" | "number" | "time" | "digest" | "object" | "strings";
const CHECKS: Record<Kind, (v: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number" && Number.isFinite(v),
  time: (v) => typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v),
  digest: (v) => typeof v === "string" && /^[0-9a-f]{64}$/.test(v),
  object: (v) => typeof v === "object" && v !== null && !Array.isArray(v),
  strings: (v) => Array.isArray(v) && v.every((s) => typeof s === "string"),
};

/** Each field of `entry` that `shape` requires and is missing or of the wrong type, as "where.field: got …". */
function wrongFields(where: string, entry: Record<string, unknown>, shape: Record<string, Kind>): string[] {
  return Object.entries(shape)
    .filter(([field, kind]) => !CHECKS[kind](entry[field]))
    .map(([field, kind]) => `${where}.${field}: expected ${kind}, got ${JSON.stringify(entry[field])}`);
}

const entryProblems = (where: string, entry: any, shape: Record<string, Kind>) => [
  ...wrongFields(where, entry, shape),
  ...wrongFields(`${where}.details`, entry.details ?? {}, MODEL_DETAILS),
];

let a: SimNode;
let b: SimNode;
let url: string;
let client: Ollama;

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await cleanupFile();
});

beforeAll(async () => {
  // Versions that sort differently as text and as numbers: the fleet's is the lowest, 0.13.4.
  a = await startSimOllama({ id: "a", models: ["llama3.2:3b", "qwen3:8b", "nomic-embed-text"], loaded: ["llama3.2:3b"], ollamaVersion: "0.13.10" });
  b = await startSimOllama({ id: "b", models: ["llama3.2:3b", "gemma3:4b", "nomic-embed-text"], ollamaVersion: "0.13.4" });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "a", ollama: "${a.url}" }], heartbeat: { intervalMs: 200 }, auth: { nodeToken: "fleet-token" } };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  url = router.url;
  spawnHerd(["node", "--router", url, "--ollama", b.url, "--node-id", "b", "--config", file], { env: { HERD_NODE_TOKEN: "fleet-token" } });
  await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.filter((n: any) => n.status === "online" && n.ollama?.reachable).length === 2, 8000, "both nodes online");
  client = new Ollama({ host: url });
});

describe("ollama-js against the fleet", () => {
  test("list(): every model once, each entry whole as its node reported it (size in its exact bytes), with fleet_nodes", async () => {
    const { models } = await client.list();
    expect(models.map((m) => m.name).sort()).toEqual(["gemma3:4b", "llama3.2:3b", "nomic-embed-text:latest", "qwen3:8b"]);
    expect(models.flatMap((m) => entryProblems(`list ${m.name}`, m, TAGS_ENTRY))).toEqual([]);
    const own = [...(await getJson(`${a.url}/api/tags`)).models, ...(await getJson(`${b.url}/api/tags`)).models];
    for (const m of models) {
      const node = own.find((o: any) => o.name === m.name);
      expect({ model: m.name, size: m.size, digest: m.digest, details: { ...m.details, fleet_nodes: undefined } }).toEqual({ model: m.name, size: node.size, digest: node.digest, details: node.details });
    }
    const holders = Object.fromEntries(models.map((m: any) => [m.name, m.details.fleet_nodes.sort()]));
    expect(holders).toEqual({ "gemma3:4b": ["b"], "llama3.2:3b": ["a", "b"], "nomic-embed-text:latest": ["a", "b"], "qwen3:8b": ["a"] });
  });

  test("ps(): one entry per node holding a model, whole as the node reported it, with fleet_node", async () => {
    const { models } = await client.ps();
    expect(models.map((m: any) => `${m.name}@${m.fleet_node}`)).toEqual(["llama3.2:3b@a"]);
    expect(models.flatMap((m) => entryProblems(`ps ${m.name}`, m, PS_ENTRY))).toEqual([]);
    const own = (await getJson(`${a.url}/api/ps`)).models[0];
    expect({ size: models[0]!.size, size_vram: models[0]!.size_vram, digest: models[0]!.digest }).toEqual({ size: own.size, size_vram: own.size_vram, digest: own.digest });
  });

  test("version(): the lowest Ollama version among the online nodes, compared as numbers; herd's own in X-Herd-Version", async () => {
    expect(await client.version()).toEqual({ version: "0.13.4" });
    const chat = (body: unknown) => fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify(body) });
    const answers = {
      version: await fetch(`${url}/api/version`),
      stream: await chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] }),
      refusal: await chat({ messages: [] }),
    };
    for (const [what, res] of Object.entries(answers)) expect([what, res.headers.get("x-herd-version")]).toEqual([what, pkg.version]);
    expect(answers.stream.headers.get("content-type")).toBe("application/x-ndjson");
    await answers.stream.text();
  });

  test("show(): the model's details from a node that has it", async () => {
    const shown = await client.show({ model: "qwen3:8b" });
    expect(wrongFields("show", shown as any, { modelfile: "string", template: "string", details: "object", model_info: "object", capabilities: "strings", modified_at: "time" })).toEqual([]);
    expect(shown.details.family).toBe("qwen3");
  });

  test("chat(): whole and streamed", async () => {
    const messages = [{ role: "user", content: "Say hello" }];
    const whole = await client.chat({ model: "llama3.2:3b", messages });
    // (Bun's toMatchObject puts its asymmetric matchers into the object it checks: values read afterwards are checked by hand.)
    expect({ model: whole.model, done: whole.done, role: whole.message.role }).toEqual({ model: "llama3.2:3b", done: true, role: "assistant" });
    expect(whole.message.content).toMatch(/\w/);
    const parts: string[] = [];
    let last: any;
    for await (const chunk of await client.chat({ model: "llama3.2:3b", messages, stream: true })) {
      parts.push(chunk.message.content);
      last = chunk;
    }
    expect(parts.length).toBeGreaterThan(1);
    expect(last).toMatchObject({ done: true, done_reason: "stop", eval_count: expect.any(Number) });
    expect(parts.join("")).toBe(whole.message.content);
  });

  test("generate()", async () => {
    const answer = await client.generate({ model: "qwen3:8b", prompt: "Why is the sky blue?", think: false });
    expect({ model: answer.model, done: answer.done, context: Array.isArray(answer.context) }).toEqual({ model: "qwen3:8b", done: true, context: true });
    expect(answer.response).toMatch(/\w/);
  });

  test("embed() with one input and with a list; embeddings() (legacy, prompt)", async () => {
    const one = await client.embed({ model: "nomic-embed-text", input: "hello" });
    expect(one.embeddings.map((e) => e.length)).toEqual([768]);
    const two = await client.embed({ model: "nomic-embed-text", input: ["hello", "world"] });
    expect(two.embeddings.map((e) => e.length)).toEqual([768, 768]);
    expect(two.embeddings[0]).toEqual(one.embeddings[0]!);
    const legacy = await client.embeddings({ model: "nomic-embed-text", prompt: "hello" });
    expect(legacy.embedding.length).toBe(768);
  });

  test("pull() streams Ollama's progress; the model is then in list()", async () => {
    const events: any[] = [];
    for await (const event of await client.pull({ model: "llama3.2:1b", stream: true })) events.push(event);
    const statuses = events.map((e) => e.status);
    expect(statuses[0]).toBe("pulling manifest");
    expect(statuses.at(-1)).toBe("success");
    const layers = events.filter((e) => e.digest);
    expect(layers.length).toBeGreaterThan(0);
    const bad = layers.flatMap((e, i) => wrongFields(`pull event ${i} (${e.status})`, e, { status: "string", digest: "string", total: "number" }));
    expect(bad).toEqual([]);
    const { models } = await client.list();
    expect(models.map((m) => m.name)).toContain("llama3.2:1b");
  });
});

describe("ollama-js changing the fleet's models (admin routes: loopback here, as no adminToken is set)", () => {
  const names = async (node: SimNode) => (await getJson(`${node.url}/api/tags`)).models.map((m: any) => m.name);
  const holders = async (model: string) => ((await client.list()).models.find((m) => m.name === model)?.details as any)?.fleet_nodes.sort();
  const failure = (call: Promise<unknown>) => call.then(() => null, (e) => ({ status: e.status_code, error: e.error }));

  test("copy(): the model is copied on every node that has it, and the list shows the copy at once", async () => {
    expect(await client.copy({ source: "llama3.2:3b", destination: "my-llama" })).toEqual({ status: "success" });
    expect(await holders("my-llama:latest")).toEqual(["a", "b"]);
    for (const node of [a, b]) expect(await names(node)).toContain("my-llama:latest");
    // Only where the source is: qwen3:8b is on a alone.
    await client.copy({ source: "qwen3:8b", destination: "my-qwen" });
    expect([await holders("my-qwen:latest"), await names(b)]).toEqual([["a"], expect.not.arrayContaining(["my-qwen:latest"])]);
    expect(await failure(client.copy({ source: "no-such:1b", destination: "x" }))).toEqual({ status: 404, error: 'model "no-such:1b" not found on any node' });
  });

  test("delete(): the model goes from every node that has it, or from the one node_id names", async () => {
    const only = await fetch(`${url}/api/delete?node_id=b`, { method: "DELETE", body: JSON.stringify({ model: "my-llama" }) });
    expect([only.status, only.headers.get("x-fleet-node"), await only.text()]).toEqual([200, "b", ""]);
    expect(await holders("my-llama:latest")).toEqual(["a"]);
    expect(await client.delete({ model: "my-qwen" })).toEqual({ status: "success" });
    await client.delete({ model: "my-llama" });
    expect((await client.list()).models.map((m) => m.name)).not.toEqual(expect.arrayContaining(["my-llama:latest"]));
    expect((await client.list()).models.map((m) => m.name)).not.toContain("my-qwen:latest");
    for (const node of [a, b]) expect(await names(node)).not.toEqual(expect.arrayContaining(["my-llama:latest", "my-qwen:latest"]));
    expect(await failure(client.delete({ model: "my-llama" }))).toEqual({ status: 404, error: 'model "my-llama" not found on any node' });
    const wrongNode = await fetch(`${url}/api/delete`, { method: "DELETE", body: JSON.stringify({ model: "qwen3:8b", node_id: "b" }) });
    expect([wrongNode.status, await wrongNode.json()]).toEqual([404, { error: "node b: model 'qwen3:8b' not found" }]);
    const unknown = await fetch(`${url}/api/delete?node_id=zz`, { method: "DELETE", body: JSON.stringify({ model: "qwen3:8b" }) });
    expect([unknown.status, ((await unknown.json()) as any).error]).toEqual([404, expect.stringContaining('node "zz" not found')]);
  });

  test("create(): on the node node_id names, Ollama's progress streamed; without one, a 400 that says to name it", async () => {
    expect(await failure(client.create({ model: "pirate", from: "llama3.2:3b" }))).toEqual({ status: 400, error: expect.stringMatching(/^node_id: required: .*one of: a, b/) });
    const statuses: string[] = [];
    const request = { model: "pirate", from: "llama3.2:3b", system: "Talk like a pirate", stream: true as const, node_id: "b" };
    for await (const event of await client.create(request)) statuses.push(event.status);
    expect(statuses.slice(-3)).toEqual([expect.stringMatching(/^creating new layer sha256:/), "writing manifest", "success"]);
    expect(await holders("pirate:latest")).toEqual(["b"]);
    const reply = await client.chat({ model: "pirate", messages: [{ role: "user", content: "hi" }] });
    expect(reply.message.content).toMatch(/\w/);
    expect(await client.create({ model: "pirate-2", from: "pirate", node_id: "b" } as never)).toEqual({ status: "success" } as never);
    expect(await failure(client.create({ model: "x", from: "llama3.2:3b", node_id: "zz" } as never))).toEqual({ status: 404, error: expect.stringContaining('node "zz" not found') });
  });

  test("push(): refused with where to push from", async () => {
    expect(await failure(client.push({ model: "llama3.2:3b" }))).toEqual({ status: 501, error: expect.stringContaining('run "ollama push llama3.2:3b" on a node that has it (a, b)') });
  });

  test("a route herd does not serve is a 404 that names no model", async () => {
    const ollama = await fetch(`${url}/api/blobs/sha256:abc`, { method: "POST" });
    expect([ollama.status, await ollama.json()]).toEqual([404, { error: "no route for POST /api/blobs/sha256:abc" }]);
    const openai = await fetch(`${url}/v1/nope`);
    expect([openai.status, ((await openai.json()) as any).error]).toEqual([404, { message: "no route for GET /v1/nope", type: "invalid_request_error", param: null, code: null }]);
  });
});
