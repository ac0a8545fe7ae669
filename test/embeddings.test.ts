// Embeddings by model name (seed 000's dispatch table) through a real router and a real node agent
// whose config declares native text and vision embedding servers: a stand-in in this file for the
// text server (GET /health, Ollama's POST /api/embed), and one for Ollama Herd's vision server
// (test/fixtures/media/ollama-herd-servers.ts: GET /models, POST /embed). Text models the text
// server serves go to it while it runs, and to Ollama when it does not; vision models never go to
// Ollama. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { cleanupFile, eventually, getJson } from "./helpers.ts";
import { type MediaFleet, startMediaFleet } from "./fixtures/media/fleet.ts";
import { ollamaHerdVisionServer, visionVector } from "./fixtures/media/ollama-herd-servers.ts";
import { encodePng } from "../src/sim/png.ts";

/** A native embedding server: each text's vector says which server made it, so a test can tell. */
function embeddingServer(sign: number, port = 0) {
  const state = { requests: [] as any[], delayMs: 0, failWith: null as { status: number; error: string } | null, server: null as ReturnType<typeof Bun.serve> | null };
  state.server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return Response.json({ status: "ok" });
      if (path !== "/api/embed" || req.method !== "POST") return new Response("not found", { status: 404 });
      const body = (await req.json()) as { model: string; input: string | string[] };
      state.requests.push(body);
      if (state.delayMs) await Bun.sleep(state.delayMs);
      if (state.failWith) return Response.json({ error: state.failWith.error }, { status: state.failWith.status });
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      return Response.json({ model: body.model, embeddings: inputs.map((text) => vector(sign, text)), prompt_eval_count: inputs.length * 3 });
    },
  });
  return state;
}

const vector = (sign: number, text: string) => [sign * 0.5, text.length, -0.25];

let fleet: MediaFleet;
let text: ReturnType<typeof embeddingServer>;
let vision: ReturnType<typeof ollamaHerdVisionServer>;
/** The requests every queue (/fleet/status's, the node services' too) has completed. */
const completed = async () => Object.values((await getJson(`${fleet.url}/fleet/status`)).queues as Record<string, { completed: number }>).reduce((n, q) => n + q.completed, 0);

const post = (path: string, body: unknown) => fetch(`${fleet.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const backendOf = async (model: string) => (await post("/api/embed", { model, input: "probe" })).headers.get("x-fleet-backend");

afterAll(async () => {
  await fleet?.stop();
  await text?.server?.stop(true);
  await vision?.stop();
  await cleanupFile();
});

beforeAll(async () => {
  text = embeddingServer(1);
  // Its weights: clip's and siglip's on disk, dinov2's not yet. The config names clip and dinov2 only.
  vision = ollamaHerdVisionServer(["clip-vit-b32", "siglip2-base"]);
  fleet = await startMediaFleet({
    section: `embedding: { text: { port: ${text.server!.port} }, vision: { port: ${vision.server.port}, models: ["clip", "dinov2-vit-s14"] } }`,
    top: "timeouts: { embeddingMs: 500 },",
    simModels: ["llama3.2:3b", "nomic-embed-text:latest", "all-minilm:latest"],
  });
  await eventually(async () => (await backendOf("nomic-embed-text")) === "native", 5000, "the native text server reported");
});

describe("text embedding models", () => {
  test("nomic-embed-text goes to the native server while it runs: Ollama's answer shape, X-Fleet-Backend native", async () => {
    const before = text.requests.length;
    const res = await post("/api/embed", { model: "nomic-embed-text", input: ["hello", "a longer text"] });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-backend")).toBe("native");
    expect(res.headers.get("x-fleet-node")).toBe("studio");
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ model: "nomic-embed-text", embeddings: [vector(1, "hello"), vector(1, "a longer text")], load_duration: 0, prompt_eval_count: 6 });
    expect(body.total_duration).toBeGreaterThan(0);
    expect(text.requests.slice(before)).toEqual([{ model: "nomic-embed-text", input: ["hello", "a longer text"] }]);
  });

  test("the legacy /api/embeddings (prompt in, one embedding out) and the OpenAI client reach it too", async () => {
    const legacy = await post("/api/embeddings", { model: "nomic-embed-text:latest", prompt: "hi there" });
    expect(legacy.headers.get("x-fleet-backend")).toBe("native");
    expect(await legacy.json()).toEqual({ embedding: vector(1, "hi there") });

    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: "unused" });
    const { data, response } = await client.embeddings.create({ model: "nomic-embed-text", input: ["abc", "de"] }).withResponse();
    expect(response.headers.get("x-fleet-backend")).toBe("native");
    expect(data.data.map((d) => d.embedding)).toEqual([vector(1, "abc"), vector(1, "de")]);
    expect(data.usage.prompt_tokens).toBe(6);
  });

  test("a native server is sent the request as herd decoded it: the model, the text(s) under input, dimensions; no other field of the client's", async () => {
    const before = text.requests.length;
    expect((await post("/api/embeddings", { model: "nomic-embed-text", prompt: "hi", keep_alive: "5m", options: { num_thread: 2 } })).status).toBe(200);
    expect((await post("/api/embed", { model: "nomic-embed-text", input: ["a", "b"], dimensions: 2, truncate: true })).status).toBe(200);
    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: "unused" });
    await client.embeddings.create({ model: "nomic-embed-text", input: "abc", dimensions: 3 });
    expect(text.requests.slice(before)).toEqual([
      { model: "nomic-embed-text", input: "hi" },
      { model: "nomic-embed-text", input: ["a", "b"], dimensions: 2 },
      { model: "nomic-embed-text", input: "abc", dimensions: 3 },
    ]);
  });

  test("a native embedding takes a slot on its node:model queue like any request: /fleet/status counts it; /fleet/queue, Ollama's and MLX's only, does not list it", async () => {
    const before = await completed();
    expect((await post("/api/embed", { model: "nomic-embed-text", input: "queued" })).status).toBe(200);
    const queues = (await getJson(`${fleet.url}/fleet/status`)).queues;
    expect(queues["studio:nomic-embed-text"]).toMatchObject({ node_id: "studio", model: "nomic-embed-text", in_flight: 0, pending: 0 });
    expect(await completed()).toBe(before + 1);
    // Seed 000: "Native text embedding … and vision embedding … appear in the dashboard's Node Models section but not here".
    expect(Object.keys((await getJson(`${fleet.url}/fleet/queue`)).queues)).not.toContain("studio:nomic-embed-text");
  });

  test("/fleet/status shows each node's embedding servers as its agent reports them", async () => {
    const studio = (await getJson(`${fleet.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "studio");
    expect(studio).toMatchObject({
      // Whether weights are cached is this machine's (test/node-machine.test.ts lays them out).
      text_embedding: { models_available: [{ name: "nomic-embed-text", dimensions: 768 }], processing: false },
      text_embedding_port: text.server!.port,
      text_embedding_status: { backend_available: true },
      // The vision server's models the config names (GET /models): two, one with its weights on disk, as the server says.
      vision_embedding_status: { backend_available: true, cached_model_count: 1 },
    });
  });

  test("a model no node has is a 404 on every embedding route, in its format", async () => {
    for (const path of ["/api/embed", "/api/embeddings"]) {
      const res = await post(path, { model: "ghost-embed", input: "x" });
      expect([path, res.status]).toEqual([path, 404]);
      expect(((await res.json()) as any).error).toStartWith('model "ghost-embed:latest" not found on any node');
    }
    const openai = await post("/v1/embeddings", { model: "ghost-embed", input: "x" });
    expect(openai.status).toBe(404);
    expect(((await openai.json()) as any).error).toMatchObject({ type: "invalid_request_error", code: "model_not_found" });
  });

  test("other embedding models stay on Ollama", async () => {
    const res = await post("/api/embed", { model: "all-minilm", input: "hello" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-backend")).toBe("ollama");
    expect(((await res.json()) as any).embeddings[0]).toHaveLength(384);
  });

  test("a client key (auth.clients) may be refused a native model as any other", async () => {
    const key = "sk-embedder-0123456789abcdef";
    const embed = (model: string) => fetch(`${fleet.url}/api/embed`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model, input: "x" }) });
    fleet.writeConfig(`auth: { clients: [{ name: "embedder", key: "${key}", models: ["all-minilm*"] }] },`);
    const refused = await eventually(async () => {
      const res = await embed("nomic-embed-text");
      return res.status === 403 && res;
    }, 5000, "a 403");
    expect(((await refused.json()) as any).error).toContain('key "embedder" may not use model "nomic-embed-text"');
    expect((await embed("all-minilm")).status).toBe(200);
    fleet.writeConfig();
    await eventually(async () => (await backendOf("nomic-embed-text")) === "native", 5000, "open again");
  });

  // Both routes take either name for their text(s): otherwise a model is asked to embed nothing and answers an empty list.
  for (const [model, backend] of [["nomic-embed-text", "native"], ["all-minilm", "ollama"]]) {
    test(`${backend} (${model}): /api/embed takes prompt for input, /api/embeddings input for prompt; the same vectors either way`, async () => {
      const answer = async (path: string, body: Record<string, unknown>) => {
        const res = await post(path, { model, ...body });
        expect([path, body, res.status, res.headers.get("x-fleet-backend")]).toEqual([path, body, 200, backend]);
        return (await res.json()) as any;
      };
      const [vector] = (await answer("/api/embed", { input: "hello" })).embeddings;
      expect(vector.length).toBeGreaterThan(0);
      expect((await answer("/api/embed", { prompt: "hello" })).embeddings).toEqual([vector]);
      expect((await answer("/api/embed", { prompt: ["hello", "hi"] })).embeddings).toHaveLength(2);
      const legacy = (await answer("/api/embeddings", { prompt: "hello" })).embedding;
      expect(legacy.length).toBe(vector.length);
      // A list of one is that one text.
      for (const input of ["hello", ["hello"]]) expect((await answer("/api/embeddings", { input })).embedding).toEqual(legacy);
    });

    // Real Ollama schedules the model (loads it) and then answers no vectors; the reference says 400, real Ollama wins.
    test(`${backend} (${model}): no text or an empty one is real Ollama's 200 with no vectors, the model scheduled on the node`, async () => {
      const loaded = async () => ((await getJson(`${fleet.sim.url}/api/ps`)).models as any[]).some((m) => m.name.startsWith(model));
      if (backend === "ollama") {
        // Unloaded first, so the empty request below is what loads it.
        expect((await post("/api/embed", { model, input: "x", keep_alive: 0 })).status).toBe(200);
        expect(await loaded()).toBe(false);
      }
      const before = { asked: text.requests.length, completed: await completed() };
      const cases: [string, Record<string, unknown>][] = [
        ["/api/embed", {}], ["/api/embed", { input: "" }], ["/api/embed", { input: [] }], ["/api/embed", { input: null }], ["/api/embed", { prompt: "" }],
        ["/api/embeddings", {}], ["/api/embeddings", { prompt: "" }], ["/api/embeddings", { input: "" }], ["/api/embeddings", { input: [] }],
      ];
      for (const [path, body] of cases) {
        const res = await post(path, { model, ...body, metadata: { tags: [`empty-${backend}`] } });
        const empty = path === "/api/embed" ? { model: backend === "native" ? model : `${model}:latest`, embeddings: [] } : { embedding: [] };
        expect([path, body, res.status, res.headers.get("x-fleet-node"), res.headers.get("x-fleet-backend"), await res.json()]).toEqual([path, body, 200, "studio", backend, empty]);
        if (backend === "ollama") expect(await loaded()).toBe(true);
      }
      // A native server has nothing to embed: it is not asked. Each request took a queue slot and is traced as any other.
      expect(text.requests.length).toBe(before.asked);
      expect(await completed()).toBe(before.completed + cases.length);
      const traced = await eventually(async () => {
        const rows = ((await getJson(`${fleet.url}/dashboard/api/traces?limit=100`)).traces as any[]).filter((t) => t.tags.includes(`empty-${backend}`));
        return rows.length === cases.length && rows;
      }, 5000, "every empty request traced");
      for (const row of traced) expect(row).toMatchObject({ node_id: "studio", status: "completed" });
    });

    test(`${backend} (${model}): a text of the wrong type is a 400 naming the field, as is a list with an empty text`, async () => {
      const cases: [string, Record<string, unknown>, string][] = [
        ["/api/embed", { input: 5 }, "input: expected a string or a list of non-empty strings"],
        ["/api/embed", { input: ["a", 1] }, "input: expected a string or a list of non-empty strings"],
        ["/api/embed", { input: ["a", ""] }, "input: expected a string or a list of non-empty strings"],
        ["/api/embed", { input: { text: "a" } }, "input: expected a string or a list of non-empty strings"],
        ["/api/embed", { prompt: 5 }, "prompt: expected a string or a list of non-empty strings"],
        ["/api/embeddings", { prompt: 5 }, "prompt: expected a string"],
        ["/api/embeddings", { input: { text: "a" } }, "input: expected a string"],
        ["/api/embeddings", { input: ["a", "b"] }, "input: /api/embeddings embeds one text; send a list to /api/embed"],
      ];
      for (const [path, body, error] of cases) {
        const res = await post(path, { model, ...body });
        expect([path, body, res.status, await res.json()]).toEqual([path, body, 400, { error }]);
      }
    });

    test(`${backend} (${model}): /v1/embeddings refuses no text or an empty one with a 400, as OpenAI does`, async () => {
      for (const input of [undefined, "", [], [""]]) {
        const res = await post("/v1/embeddings", { model, input });
        const message = input === undefined ? "input: required: the text, or list of texts, to embed" : "input: expected a non-empty string or a non-empty list of non-empty strings";
        expect([input, res.status, await res.json()]).toEqual([input, 400, { error: { message, type: "invalid_request_error", param: null, code: null } }]);
      }
    });
  }

  test("a server slower than timeouts.embeddingMs is a 504 with Retry-After, in each route's format", async () => {
    text.delayMs = 1500;
    try {
      const res = await post("/api/embed", { model: "nomic-embed-text", input: "slow" });
      expect(res.status).toBe(504);
      expect(res.headers.get("retry-after")).toBe("30");
      const { error } = (await res.json()) as any;
      expect(error).toContain("native text embedding timed out");
      expect(error).toContain("within 500 ms");
      expect(error).toContain("the first request may download the model");

      const legacy = await post("/api/embeddings", { model: "nomic-embed-text", prompt: "slow" });
      expect([legacy.status, legacy.headers.get("retry-after")]).toEqual([504, "30"]);
      expect(((await legacy.json()) as any).error).toContain("native text embedding timed out");
      const openai = await post("/v1/embeddings", { model: "nomic-embed-text", input: "slow" });
      expect([openai.status, openai.headers.get("retry-after")]).toEqual([504, "30"]);
      expect(((await openai.json()) as any).error).toMatchObject({ type: "api_error", message: expect.stringContaining("native text embedding timed out") });
    } finally {
      text.delayMs = 0;
    }
    // An Ollama node past the deadline is the 504 of any request past it: no model download to wait out.
    fleet.sim.setFaults({ firstByteDelayMs: 1500 });
    try {
      const ollama = await post("/api/embed", { model: "all-minilm", input: "slow" });
      expect([ollama.status, ollama.headers.get("retry-after"), await ollama.json()]).toEqual([504, null, { error: "the request ran past its deadline of 500 ms (timeouts.embeddingMs)" }]);
    } finally {
      fleet.sim.setFaults({});
    }
  });

  test("a native server's 5xx is a failure of that node (the next is tried; none left: 503); any other answer of it is final", async () => {
    text.failWith = { status: 500, error: "onnx session crashed" };
    try {
      const failed = await post("/api/embed", { model: "nomic-embed-text", input: "x" });
      expect(failed.status).toBe(503);
      expect(failed.headers.get("x-fleet-retries")).toBe("0");
      expect(((await failed.json()) as any).error).toBe("no node that offers it could be reached: studio: studio's native text embedding server: onnx session crashed");
      text.failWith = { status: 422, error: "input too long for the model" };
      const refused = await post("/api/embed", { model: "nomic-embed-text", input: "x" });
      expect(refused.status).toBe(422);
      expect(refused.headers.get("x-fleet-node")).toBe("studio");
      expect(((await refused.json()) as any).error).toContain("input too long for the model");
    } finally {
      text.failWith = null;
    }
  });

  test("when the native server stops, nomic-embed-text goes back to Ollama; when it is back, to it again", async () => {
    const port = text.server!.port;
    await text.server!.stop(true);
    await eventually(async () => (await backendOf("nomic-embed-text")) === "ollama", 5000, "Ollama serving nomic-embed-text");
    const res = await post("/api/embed", { model: "nomic-embed-text", input: "hello" });
    expect(((await res.json()) as any).embeddings[0]).toHaveLength(768); // the simulated Ollama's nomic-embed-text
    text = embeddingServer(1, port);
    await eventually(async () => (await backendOf("nomic-embed-text")) === "native", 5000, "the native server again");
  });
});

describe("vision embedding models", () => {
  const image = (w: number, h: number) => encodePng(w, h, () => [1, 2, 3]);
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

  test("a model the vision server serves goes to its POST /embed, the images in base64: clip is its clip-vit-b32; X-Fleet-Backend vision", async () => {
    const [a, b] = [image(32, 32), image(48, 16)];
    const res = await post("/api/embed", { model: "clip", input: [b64(a), b64(b)] });
    expect([res.status, res.headers.get("x-fleet-backend"), res.headers.get("x-fleet-node")]).toEqual([200, "vision", "studio"]);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ model: "clip-vit-b32", embeddings: [visionVector("clip-vit-b32", a), visionVector("clip-vit-b32", b)] });
    expect(body.embeddings[0]).toHaveLength(512);
    expect(vision.requests.at(-1)).toEqual({ model: "clip-vit-b32", images: [b64(a), b64(b)] });
    // The legacy route and the OpenAI client take an image too.
    const legacy = await post("/api/embeddings", { model: "clip-vit-b32", prompt: b64(a) });
    expect(await legacy.json()).toEqual({ embedding: visionVector("clip-vit-b32", a) });
    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: "unused" });
    const { data } = await client.embeddings.create({ model: "dinov2-vit-s14", input: [b64(b)], dimensions: 384, encoding_format: "float" });
    expect(data.map((d) => d.embedding)).toEqual([visionVector("dinov2-vit-s14", b)]);
  });

  test("a vision model the server lists but the config does not name, or one no running server serves, is a 503, never Ollama", async () => {
    for (const model of ["siglip", "siglip2-base"]) {
      const res = await post("/api/embed", { model, input: b64(image(8, 8)) });
      expect([model, res.status, res.headers.get("x-fleet-node")]).toEqual([model, 503, "none"]);
      expect(((await res.json()) as any).error).toContain(`"${model}" is a vision embedding model, but no online node runs a vision embedding server that serves it`);
    }
  });

  test("/v1/models lists the embedding models the native servers serve, each once, by the backend /api/embed sends it to", async () => {
    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: "unused" });
    const listed = new Map<string, string>();
    for await (const m of client.models.list()) listed.set(m.id, m.owned_by);
    expect([listed.get("clip-vit-b32"), listed.get("dinov2-vit-s14"), listed.get("nomic-embed-text")]).toEqual(["vision", "vision", "native"]);
    expect([...listed.keys()].filter((id) => id.startsWith("nomic-embed-text"))).toEqual(["nomic-embed-text"]);
  });

  test("/api/pull of a vision embedding model is a 400 saying what to run instead", async () => {
    const res = await post("/api/pull", { name: "clip" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain('"clip" is a vision embedding model of a native embedding server, not an Ollama model');
  });

  test("features.visionEmbedding: false is a 503; a stopped vision server is a 503", async () => {
    fleet.writeConfig("features: { visionEmbedding: false },");
    const disabled = await eventually(async () => {
      const res = await post("/api/embed", { model: "clip", input: "x" });
      return res.status === 503 && res;
    }, 5000, "a 503");
    expect(((await disabled.json()) as any).error).toContain("vision embedding is disabled on this router (features.visionEmbedding)");
    // Nor does /v1/models offer what /api/embed refuses.
    expect((await getJson(`${fleet.url}/v1/models`)).data.map((m: any) => m.id)).not.toContain("clip-vit-b32");
    fleet.writeConfig();
    await eventually(async () => (await post("/api/embed", { model: "clip", input: b64(image(8, 8)) })).status === 200, 5000, "vision served again");

    // At once the router finds it unreachable; from the agent's next heartbeat on it knows the server is down.
    await vision.stop();
    const unreachable = await post("/api/embed", { model: "clip", input: "x" });
    expect(unreachable.status).toBe(503);
    await eventually(async () => {
      const res = await post("/api/embed", { model: "clip", input: "x" });
      return res.status === 503 && ((await res.json()) as any).error.includes("no online node runs a vision embedding server");
    }, 5000, "a 503 that says no server runs");
  });
});
