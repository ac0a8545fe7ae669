// Image generation through a real router and a real node agent that runs stand-ins for mflux and
// DiffusionKit (test/fixtures/media): the PNGs they write come back raw from /api/generate-image and
// as b64_json to the official OpenAI client; an Ollama x/ model goes through that node's Ollama.
// Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { cleanupFile, eventually, fleetSet, getJson, refusedSet } from "./helpers.ts";
import { type MediaFleet, standIn, startMediaFleet } from "./fixtures/media/fleet.ts";
import { decodePng, encodePng } from "../src/sim/png.ts";

let fleet: MediaFleet;
let ollamaImager: ReturnType<typeof Bun.serve>;
const imagerRequests: any[] = [];
/** How long the imager takes for an image: long enough, a test sees the job while it runs. */
let imagerDelayMs = 0;

const post = (path: string, body: unknown) =>
  fetch(`${fleet.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const png = async (res: Response) => decodePng(new Uint8Array(await res.arrayBuffer()));
const argsOf = (image: { text: Record<string, string> }) => JSON.parse(image.text.args!);

// An Ollama with an experimental x/ image model, answering Ollama's OpenAI-compatible image endpoint.
function startOllamaImager() {
  const model = { name: "x/z-image-turbo:latest", model: "x/z-image-turbo:latest", size: 12e9, details: {} };
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/api/version") return Response.json({ version: "0.32.5" }); // the last release with image generation
      if (path === "/api/tags") return Response.json({ models: [model] });
      if (path === "/api/ps") return Response.json({ models: [] });
      if (path === "/v1/images/generations" && req.method === "POST") {
        const body = (await req.json()) as { size: string };
        imagerRequests.push(body);
        if (imagerDelayMs) await Bun.sleep(imagerDelayMs);
        const [w, h] = String(body.size).split("x").map(Number);
        return Response.json({ created: 1, data: [{ b64_json: Buffer.from(encodePng(w!, h!, () => [1, 2, 3])).toString("base64") }] });
      }
      return new Response("404 page not found", { status: 404 });
    },
  });
}

afterAll(async () => {
  await fleet?.stop();
  await ollamaImager?.stop(true);
  await cleanupFile();
});

beforeAll(async () => {
  ollamaImager = startOllamaImager();
  fleet = await startMediaFleet({
    section: `images: { port: 0, models: [
      { name: "z-image-turbo", command: ${JSON.stringify(standIn("mflux-generate.ts"))}, steps: 4, quantize: 8 },
      { name: "sd3-medium", backend: "diffusionkit", command: ${JSON.stringify(standIn("diffusionkit-cli.ts"))}, model: "argmaxinc/mlx-stable-diffusion-3-medium" },
      { name: "flux-broken", command: ${JSON.stringify([...standIn("mflux-generate.ts"), "--no-such-flag"])} },
      { name: "flux-uninstalled", command: ["/nonexistent/bin/mflux-generate"] },
    ] }`,
    // ghost: an agent node this file plays by hand (see "retries"); silent, it stays offline. Its heartbeats carry no
    // credential, so the image service they report counts only as its entry declares one (at the port its agent picks).
    nodes: `{ id: "imager", ollama: "http://127.0.0.1:${ollamaImager.port}" }, { id: "ghost", images: { port: 0, models: [{ name: "z-image-turbo" }] } }`,
  });
  await eventually(async () => (await getJson(`${fleet.url}/api/image-models`)).models.length === 4, 8000, "image models reported");
});

describe("the fleet's image models", () => {
  test("GET /api/image-models lists each with its backend and nodes, in seed 000's two backends; an uninstalled CLI is not offered", async () => {
    const { models } = await getJson(`${fleet.url}/api/image-models`);
    expect(models.sort((a: any, b: any) => a.name.localeCompare(b.name))).toEqual([
      { name: "flux-broken", type: "image", backend: "mflux", fleet_nodes: ["studio"] },
      // A DiffusionKit model is the agent's image service's as an mflux one is: "mflux (mflux/DiffusionKit via port 11436)".
      { name: "sd3-medium", type: "image", backend: "mflux", fleet_nodes: ["studio"] },
      { name: "x/z-image-turbo:latest", type: "image", backend: "ollama", fleet_nodes: ["imager"] },
      { name: "z-image-turbo", type: "image", backend: "mflux", fleet_nodes: ["studio"] },
    ]);
    expect(fleet.agent.output()).toContain("/nonexistent/bin/mflux-generate not found, so image model flux-uninstalled is not offered");
  });

  test("/api/tags and /v1/models include them, tagged as images", async () => {
    const tags = (await getJson(`${fleet.url}/api/tags`)).models;
    // An image service's model has no Ollama entry: Ollama's zero values fill the fields clients type (ollama-js).
    const noDetails = { parent_model: "", format: "", family: "", families: [], parameter_size: "", quantization_level: "" };
    expect(tags.find((m: any) => m.name === "z-image-turbo")).toEqual({
      name: "z-image-turbo",
      model: "z-image-turbo",
      modified_at: "0001-01-01T00:00:00Z",
      size: 0,
      digest: "",
      details: { ...noDetails, fleet_nodes: ["studio"], type: "image" },
    });
    // An x/ model is Ollama's own: its entry as the node listed it.
    expect(tags.find((m: any) => m.name === "x/z-image-turbo:latest")).toMatchObject({ size: 12e9, details: { fleet_nodes: ["imager"], type: "image" } });
    const ids = (await getJson(`${fleet.url}/v1/models`)).data.map((m: any) => m.id);
    expect(ids).toContain("sd3-medium");
  });
});

describe("POST /api/generate-image", () => {
  test("answers mflux's PNG, of the requested size, with the seed's headers; the CLI got mflux's flags", async () => {
    const res = await post("/api/generate-image", { model: "z-image-turbo", prompt: "a cat on a laptop", width: 320, height: 192, seed: 42, negative_prompt: "dogs" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-fleet-node")).toBe("studio");
    expect(res.headers.get("x-fleet-model")).toBe("z-image-turbo");
    expect(res.headers.get("x-fleet-backend")).toBe("image");
    expect(Number(res.headers.get("x-generation-time"))).toBeGreaterThan(0);
    const image = await png(res);
    expect([image.width, image.height]).toEqual([320, 192]);
    // The model's configured steps and quantisation apply when the request leaves them out.
    expect(argsOf(image)).toMatchObject({ model: "z-image-turbo", prompt: "a cat on a laptop", width: 320, height: 192, seed: 42, steps: 4, quantize: 8, "negative-prompt": "dogs" });
    expect(argsOf(image).output).toEndWith("image.png");
  });

  test("DiffusionKit gets its own flags (--model-version, --output-path, --cfg)", async () => {
    const res = await post("/api/generate-image", { model: "sd3-medium", prompt: "a lighthouse", width: 128, height: 256, steps: 20, guidance: 7 });
    expect(res.status).toBe(200);
    const image = await png(res);
    expect([image.width, image.height]).toEqual([128, 256]);
    expect(argsOf(image)).toMatchObject({ "model-version": "argmaxinc/mlx-stable-diffusion-3-medium", prompt: "a lighthouse", steps: 20, cfg: 7 });
    expect(argsOf(image)["output-path"]).toEndWith("image.png");
  });

  test("an Ollama x/ model goes through that node's Ollama", async () => {
    const res = await post("/api/generate-image", { model: "x/z-image-turbo:latest", prompt: "a fox", width: 96, height: 64 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("imager");
    expect(res.headers.get("x-fleet-backend")).toBe("ollama");
    const image = await png(res);
    expect([image.width, image.height]).toEqual([96, 64]);
    expect(imagerRequests.at(-1)).toEqual({ model: "x/z-image-turbo:latest", prompt: "a fox", size: "96x64", response_format: "b64_json" });
  });

  test("a CLI that fails is a 502 that says why", async () => {
    const res = await post("/api/generate-image", { model: "flux-broken", prompt: "anything" });
    expect(res.status).toBe(502);
    // studio ran the job, so the headers name it.
    expect(res.headers.get("x-fleet-node")).toBe("studio");
    const { error } = (await res.json()) as any;
    expect(error).toContain("image generation failed on studio");
    expect(error).toContain("exited with code 2");
    expect(error).toContain("unrecognized arguments: --no-such-flag");
  });

  test("a model no node offers is a 404 that lists what the fleet has", async () => {
    for (const model of ["flux-uninstalled", "no-such-model"]) {
      const res = await post("/api/generate-image", { model, prompt: "anything" });
      expect(res.status).toBe(404);
      expect(res.headers.get("x-fleet-node")).toBe("none");
      const { error } = (await res.json()) as any;
      expect(error).toContain(`image model "${model}" is not available on any node`);
      expect(error).toContain("sd3-medium, x/z-image-turbo:latest, z-image-turbo");
    }
  });

  test("missing or bad fields are a 400 naming each", async () => {
    const cases: [unknown, string][] = [
      [{}, "model: required; prompt: required"],
      [{ model: "z-image-turbo" }, "prompt: required"],
      [{ model: "z-image-turbo", prompt: "x", width: 10 }, "width: "],
      [{ model: "z-image-turbo", prompt: "x", height: 12.5 }, "height: expected a whole number of pixels"],
      [{ model: "z-image-turbo", prompt: "x", quantize: 7 }, "quantize: expected 3, 4, 5, 6 or 8"],
      [{ model: "z-image-turbo", prompt: "x", seed: "abc" }, "seed: "],
    ];
    for (const [body, message] of cases) {
      const res = await post("/api/generate-image", body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toContain(message);
      // Refused before routing, with the X-Fleet-* set all the same: no node, the model asked for if named.
      expect(fleetSet(res)).toEqual(refusedSet((body as { model?: string }).model ?? "none"));
    }
    const notJson = await fetch(`${fleet.url}/api/generate-image`, { method: "POST", body: "{nope" });
    expect(notJson.status).toBe(400);
    expect(fleetSet(notJson)).toEqual(refusedSet("none"));
  });
});

describe("POST /v1/images/generations", () => {
  test("the official OpenAI client gets b64_json that decodes to a PNG of the requested size", async () => {
    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: "unused" });
    const answer = await client.images.generate({ model: "sd3-medium", prompt: "a red bicycle", size: "256x128" as "256x256", response_format: "b64_json" });
    expect(answer.created).toBeGreaterThan(0);
    expect(answer.data).toHaveLength(1);
    expect(answer.data![0]!.revised_prompt).toBe("a red bicycle");
    const image = decodePng(Buffer.from(answer.data![0]!.b64_json!, "base64"));
    expect([image.width, image.height]).toEqual([256, 128]);
    expect(argsOf(image).prompt).toBe("a red bicycle");
  });

  test('response_format "url" answers the raw PNG; size defaults to 1024x1024', async () => {
    const res = await post("/v1/images/generations", { model: "z-image-turbo", prompt: "a tree", response_format: "url" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-fleet-model")).toBe("z-image-turbo");
    const image = await png(res);
    expect([image.width, image.height]).toEqual([1024, 1024]);
  });

  test("errors come in OpenAI's shape, naming the field", async () => {
    const cases: [unknown, number, string][] = [
      [{ prompt: "x" }, 400, "model: required"],
      [{ model: "z-image-turbo", prompt: "x", size: "big" }, 400, 'size: expected "WIDTHxHEIGHT"'],
      [{ model: "z-image-turbo", prompt: "x", size: "8000x8000" }, 400, "size: expected each side from 64 to 4096 pixels"],
      [{ model: "z-image-turbo", prompt: "x", n: 2 }, 400, "n: expected 1"],
      [{ model: "z-image-turbo", prompt: "x", response_format: "png" }, 400, 'response_format: expected "b64_json" or "url"'],
      [{ model: "nope", prompt: "x" }, 404, 'image model "nope" is not available'],
      [{ model: "flux-broken", prompt: "x" }, 502, "unrecognized arguments"],
    ];
    for (const [body, status, message] of cases) {
      const res = await post("/v1/images/generations", body);
      expect(res.status).toBe(status);
      const { error } = (await res.json()) as any;
      expect(error.message).toContain(message);
      if (status === 400) expect(fleetSet(res)).toEqual(refusedSet((body as { model?: string }).model ?? "none"));
      expect(error.type).toBeString();
    }
  });
});

describe("benchmarks", () => {
  test('model_types ["image"] generates the fleet\'s image models through /api/generate-image and reports them as image', async () => {
    const started = await post("/dashboard/api/benchmarks/start", { duration: 1, model_types: ["image"] });
    expect(await started.json()).toMatchObject({ status: "started", model_types: ["image"] });
    const done = await eventually(async () => {
      const p = await getJson(`${fleet.url}/dashboard/api/benchmarks/progress`);
      return ["complete", "error"].includes(p.status) && p;
    }, 20000, "the benchmark to finish");
    expect(done).toMatchObject({ status: "complete", error: null });
    expect(done.models).toContain("z-image-turbo");
    expect(done.requests_completed).toBeGreaterThan(0);
    const run = (await getJson(`${fleet.url}/dashboard/api/benchmarks?limit=1`)).data[0];
    const perModel = JSON.parse(run.per_model_results);
    const turbo = perModel.find((m: any) => m.model === "z-image-turbo");
    expect(turbo).toMatchObject({ type: "image", failures: 0 });
    expect(turbo.requests).toBeGreaterThan(0);
    expect(turbo.latency_p50_ms).toBeGreaterThan(0);
    // A model whose CLI fails is measured too: each of its requests a failure.
    const broken = perModel.find((m: any) => m.model === "flux-broken");
    expect([broken.type, broken.requests > 0, broken.failures === broken.requests]).toEqual(["image", true, true]);
  });
});

describe("pulls and the feature switch", () => {
  test("/api/pull of a fleet image model is a 400 naming the install command", async () => {
    const sd3 = await post("/api/pull", { name: "sd3-medium" });
    expect(sd3.status).toBe(400);
    expect(((await sd3.json()) as any).error).toContain("install it with: pip install diffusionkit");
    const broken = await post("/api/pull", { name: "flux-broken" });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error).toContain("install it with: uv tool install mflux");
  });

  test("a client key (auth.clients) is charged as for any request: a model it may not use is a 403", async () => {
    const key = "sk-artist-0123456789abcdef";
    const as = (bearer: string | null, model: string) =>
      fetch(`${fleet.url}/api/generate-image`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body: JSON.stringify({ model, prompt: "x", width: 64, height: 64 }),
      });
    fleet.writeConfig(`auth: { clients: [{ name: "artist", key: "${key}", models: ["sd3-*"] }] },`);
    const refused = await eventually(async () => {
      const res = await as(key, "z-image-turbo");
      return res.status === 403 && res;
    }, 5000, "a 403");
    expect(((await refused.json()) as any).error).toContain('key "artist" may not use model "z-image-turbo"');
    expect((await as(key, "sd3-medium")).status).toBe(200);
    expect((await as(null, "sd3-medium")).status).toBe(401);
    fleet.writeConfig();
    await eventually(async () => (await as(null, "z-image-turbo")).status === 200, 5000, "open again");
  });

  test("features.imageGeneration: false is a 503 on both routes; back on, it serves again", async () => {
    fleet.writeConfig("features: { imageGeneration: false },");
    const disabled = await eventually(async () => {
      const res = await post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 });
      return res.status === 503 && res;
    }, 5000, "a 503");
    expect(((await disabled.json()) as any).error).toContain("image generation is disabled on this router (features.imageGeneration)");
    const openai = await post("/v1/images/generations", { model: "z-image-turbo", prompt: "x" });
    expect(openai.status).toBe(503);
    fleet.writeConfig();
    await eventually(async () => (await post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 })).status === 200, 5000, "served again");
  });

  test("with a node credential configured, the node's image service runs jobs only for the router", async () => {
    const port = fleet.agent.output().match(/image service on http:\/\/127\.0\.0\.1:(\d+)/)![1];
    const job = { model: "z-image-turbo", prompt: "x", width: 64, height: 64 };
    const direct = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/api/generate-image`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(job) });
    fleet.writeConfig(`auth: { nodeToken: "node-secret-for-images" },`);
    const stranger = await eventually(async () => {
      const res = await direct({});
      return res.status === 401 && res;
    }, 5000, "the agent to ask for the credential");
    expect(((await stranger.json()) as any).error).toContain("need the node credential");
    expect((await direct({ authorization: "Bearer guess" })).status).toBe(401);
    expect((await direct({ authorization: "Bearer node-secret-for-images" })).status).toBe(200);
    await eventually(async () => (await post("/api/generate-image", job)).status === 200, 5000, "the router's job, with the credential");
    fleet.writeConfig();
  });
});

describe("an image job is a request like any other", () => {
  const slowImage = () => post("/api/generate-image", { model: "x/z-image-turbo:latest", prompt: "slow", width: 64, height: 64 });
  const queueOf = async () => (await getJson(`${fleet.url}/fleet/status`)).queues["imager:x/z-image-turbo:latest"];

  test("it holds a slot on its node:model queue while it runs: /fleet/status shows it in flight, then completed; /fleet/queue, Ollama's and MLX's inference only, does not list it", async () => {
    const before = (await queueOf())?.completed ?? 0;
    imagerDelayMs = 1000;
    try {
      const image = slowImage();
      const running = await eventually(async () => {
        const q = await queueOf();
        return q?.in_flight === 1 && q;
      }, 3000, "the job in flight on /fleet/status");
      expect(running).toMatchObject({ node_id: "imager", model: "x/z-image-turbo:latest", pending: 0 });
      const queue = await getJson(`${fleet.url}/fleet/queue`);
      expect([Object.keys(queue.queues), queue.in_flight]).toEqual([expect.not.arrayContaining(["imager:x/z-image-turbo:latest"]), 0]);
      expect((await image).status).toBe(200);
      expect(await queueOf()).toMatchObject({ in_flight: 0, completed: before + 1 });
    } finally {
      imagerDelayMs = 0;
    }
  });

  test("it counts against routing.clientMaxInFlight: a chat (or another image) from that client meanwhile is a 429", async () => {
    fleet.writeConfig("routing: { clientMaxInFlight: 1, clientRetryAfterSeconds: 3 },");
    await eventually(async () => (await getJson(`${fleet.url}/fleet/limits`)).client_max_in_flight === 1, 5000, "the cap in force");
    imagerDelayMs = 1000;
    try {
      const asked = imagerRequests.length;
      const image = slowImage();
      await eventually(async () => imagerRequests.length > asked, 3000, "the job running on the imager");
      const chat = await post("/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false });
      expect(chat.status).toBe(429);
      expect(chat.headers.get("retry-after")).toBe("3");
      expect(((await chat.json()) as any).error).toContain("requests in flight (routing.clientMaxInFlight)");
      const second = await post("/v1/images/generations", { model: "x/z-image-turbo:latest", prompt: "x", size: "64x64" });
      expect(second.status).toBe(429);
      expect(second.headers.get("x-fleet-node")).toBe("none");
      expect(((await second.json()) as any).error.message).toContain("routing.clientMaxInFlight");
      expect((await image).status).toBe(200);
      // Its place is given back with its answer: the client's next chat is never refused for the cap (on a busy machine the
      // node's fast heartbeat may lapse a moment, a 503 that says nothing of the cap, so the chat is tried until it is served).
      const statuses: number[] = [];
      await eventually(async () => {
        const res = await post("/api/chat", { model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false });
        statuses.push(res.status);
        return res.status === 200;
      }, 5000, "the chat after the image");
      expect(statuses).not.toContain(429);
    } finally {
      imagerDelayMs = 0;
      fleet.writeConfig();
    }
  });

  test("it counts against its client key's auth.clients maxInFlight: a chat or an image with that key meanwhile is a 429 with Retry-After", async () => {
    const key = "sk-one-at-a-time-0123456789";
    const withKey = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    fleet.writeConfig(`auth: { clients: [{ name: "one", key: "${key}", maxInFlight: 1 }] }, routing: { clientRetryAfterSeconds: 4 },`);
    await eventually(async () => (await post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 })).status === 401, 5000, "keys in force");
    imagerDelayMs = 1000;
    try {
      const asked = imagerRequests.length;
      const image = fetch(`${fleet.url}/api/generate-image`, { method: "POST", headers: withKey, body: JSON.stringify({ model: "x/z-image-turbo:latest", prompt: "slow", width: 64, height: 64 }) });
      await eventually(async () => imagerRequests.length > asked, 3000, "the job running on the imager");
      const chat = await fetch(`${fleet.url}/api/chat`, { method: "POST", headers: withKey, body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false }) });
      expect(chat.status).toBe(429);
      expect(((await chat.json()) as any).error).toContain('key "one" already has 1 requests in flight (auth.clients[].maxInFlight)');
      expect(chat.headers.get("retry-after")).toBe("4");
      // And another image with that key: the same 429, Retry-After included.
      const second = await fetch(`${fleet.url}/v1/images/generations`, { method: "POST", headers: withKey, body: JSON.stringify({ model: "x/z-image-turbo:latest", prompt: "x", size: "64x64" }) });
      expect(second.status).toBe(429);
      expect(second.headers.get("retry-after")).toBe("4");
      expect((await image).status).toBe(200);
    } finally {
      imagerDelayMs = 0;
      fleet.writeConfig();
      await eventually(async () => (await post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 })).status === 200, 5000, "open again");
    }
  });

});

describe("retries (routing.maxRetries)", () => {
  let closedPort = 0;
  // ghost says it offers z-image-turbo and has more memory free than studio, so it is tried first; its image service is not there.
  const ghostHeartbeat = () =>
    fetch(`${fleet.url}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        node_id: "ghost",
        ollama_url: `http://127.0.0.1:${closedPort}`,
        image_port: closedPort,
        image_models: [{ name: "z-image-turbo", backend: "mflux" }],
        memory: { total_gb: 4096, used_gb: 0, available_gb: 4096, pressure: "nominal" },
      }),
    });
  const generate = () => post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 });

  beforeAll(async () => {
    const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    closedPort = gone.port!;
    await gone.stop(true);
  });

  test("a node that cannot be reached is skipped for the next, and counted; maxRetries: 0 stops after it", async () => {
    expect((await ghostHeartbeat()).status).toBe(200);
    const res = await generate();
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("studio");
    expect(res.headers.get("x-fleet-retries")).toBe("1");
    const traces = async () => (await getJson(`${fleet.url}/dashboard/api/traces?limit=20`)).traces;
    const trace = await eventually(async () => (await traces()).find((t: any) => t.original_model === "z-image-turbo" && t.retry_count === 1), 3000, "its trace");
    expect(trace).toMatchObject({ node_id: "studio", status: "completed", excluded_nodes: ["ghost"] });

    fleet.writeConfig("routing: { maxRetries: 0 },");
    await eventually(async () => (await getJson(`${fleet.url}/fleet/limits`)).max_retries === 0, 5000, "maxRetries 0 in force");
    await ghostHeartbeat();
    const stopped = await generate();
    expect(stopped.status).toBe(503);
    expect(stopped.headers.get("x-fleet-node")).toBe("none");
    expect(stopped.headers.get("x-fleet-retries")).toBe("0"); // the only try failed: no retry
    expect(((await stopped.json()) as any).error).toContain("no node that offers it could be reached: ghost: ");
    fleet.writeConfig();
  });
});
