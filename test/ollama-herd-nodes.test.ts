// A mixed fleet: a node still run by Ollama Herd's agent beside herd's router. This file plays that
// agent, posting the heartbeat Ollama Herd 0.6.1 sends (test/fixtures/ollama-herd/heartbeat.json,
// made by its own HeartbeatPayload) with the ports of stand-ins for the servers it runs, which
// speak their real wire (test/fixtures/media/ollama-herd-servers.ts): its image server, its vision
// embedding server and mlx-qwen3-asr's job server. A real router process serves them to clients.
// Tests share the fleet, in order; the long jobs come last (the job server runs one at a time).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodePng, encodePng } from "../src/sim/png.ts";
import { cleanupFile, eventually, getJson, type Running, startRouterProcess, tmpDir } from "./helpers.ts";
import { asrJobServer, ollamaHerdImageServer, ollamaHerdVisionServer, visionVector } from "./fixtures/media/ollama-herd-servers.ts";
import { wav } from "./fixtures/media/wav.ts";

const recorded = JSON.parse(readFileSync(join(import.meta.dir, "fixtures/ollama-herd/heartbeat.json"), "utf8"));
const TRANSCRIPTION_MS = 3000;

let router: Running & { url: string };
let images: ReturnType<typeof ollamaHerdImageServer>;
let vision: ReturnType<typeof ollamaHerdVisionServer>;
let asr: ReturnType<typeof asrJobServer>;
let beating: Timer | undefined;

const post = (path: string, body: unknown) => fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const heartbeat = () =>
  post("/heartbeat", { ...recorded, image_port: images.server.port, transcription_port: asr.server.port, vision_embedding_port: vision.server.port });
const transcribe = (audio: Uint8Array, fields: Record<string, string> = {}, signal?: AbortSignal) => {
  const form = new FormData();
  form.set("audio", new Blob([audio], { type: "audio/wav" }), "memo.wav");
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  return fetch(`${router.url}/api/transcribe`, { method: "POST", body: form, signal });
};
const mini = async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mini");
const png = (w: number, h: number) => encodePng(w, h, () => [10, 20, 30]);
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

afterAll(async () => {
  clearInterval(beating);
  await router?.stop();
  await Promise.all([images?.stop(), vision?.stop(), asr?.stop()]);
  await cleanupFile();
});

beforeAll(async () => {
  // Its CLIs: z-image-turbo only, though it reported sd3-medium too (see "a model it no longer has").
  images = ollamaHerdImageServer(["z-image-turbo"]);
  vision = ollamaHerdVisionServer(["dinov2-vit-s14"]);
  asr = asrJobServer();
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(
    file,
    // Its services declared, as docs/media.md says: with no node credential, herd takes of a heartbeat only the
    // services the node's entry declares.
    `export default {
  nodes: [{
    id: "mini",
    mlx: [{ model: "mlx-community/Qwen3-4B-4bit", port: 11440 }],
    images: { port: ${images.server.port}, models: [{ name: "z-image-turbo" }, { name: "sd3-medium", backend: "diffusionkit" }] },
    transcription: { port: ${asr.server.port}, models: [{ name: "qwen3-asr" }] },
    embedding: { vision: { port: ${vision.server.port}, models: ["dinov2-vit-s14"] } },
  }],
  heartbeat: { offlineMs: 60000 },
  timeouts: { transcriptionMs: ${TRANSCRIPTION_MS}, embeddingMs: 2000 },
};\n`,
  );
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await heartbeat();
  beating = setInterval(() => void heartbeat().catch(() => {}), 1000);
});

describe("an Ollama Herd agent's heartbeat", () => {
  test("is taken as it comes: the node online, its agent named, its figures in herd's words", async () => {
    const answer = await heartbeat();
    expect([answer.status, await answer.json()]).toEqual([200, { status: "ok", node_status: "online" }]);
    const node = await mini();
    expect(node).toMatchObject({
      status: "online",
      agent_version: "ollama-herd 0.6.1",
      memory: { total_gb: 32, used_gb: 12, available_gb: 20, pressure: "nominal" },
      hardware: { chip: "Apple M4", memory_bandwidth_gbps: 120, memory_total_gb: 32, cores_physical: 10 },
      vision_embedding_status: { backend_available: true, cached_model_count: 1 },
    });
  });

  test("its image models are the fleet's, each with its backend; its MLX server's model is not taken for an Ollama one", async () => {
    const { models } = await getJson(`${router.url}/api/image-models`);
    expect(models.sort((a: any, b: any) => a.name.localeCompare(b.name))).toEqual([
      { name: "sd3-medium", type: "image", backend: "mflux", fleet_nodes: ["mini"] },
      { name: "z-image-turbo", type: "image", backend: "mflux", fleet_nodes: ["mini"] },
    ]);
    const tags = (await getJson(`${router.url}/api/tags`)).models.map((m: any) => m.name);
    expect(tags).toContain("llama3.2:3b");
    // Its collector lists the MLX server's model among Ollama's too, as mlx:…; herd lists it once, from mlx_servers.
    expect(tags.filter((t: string) => t.startsWith("mlx:"))).toEqual(["mlx:mlx-community/Qwen3-4B-4bit"]);
  });
});

describe("images from its image server", () => {
  test("POST /api/generate-image reaches its POST /api/generate-image with herd's fields, no credential: the PNG and the seed's headers", async () => {
    const res = await post("/api/generate-image", { model: "z-image-turbo", prompt: "a heron", width: 128, height: 96, seed: 7 });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect([res.headers.get("x-fleet-node"), res.headers.get("x-fleet-backend"), res.headers.get("x-generation-time")]).toEqual(["mini", "image", "1234"]);
    const image = decodePng(new Uint8Array(await res.arrayBuffer()));
    expect([image.width, image.height]).toEqual([128, 96]);
    expect(images.requests.at(-1)).toEqual({ body: { model: "z-image-turbo", prompt: "a heron", width: 128, height: 96, seed: 7, negative_prompt: "" }, authorization: null });
  });

  test("its CLI failing is a 502 that names the node and says why", async () => {
    images.cliError = "Error: not enough memory to load the model";
    try {
      const res = await post("/api/generate-image", { model: "z-image-turbo", prompt: "x", width: 64, height: 64 });
      expect([res.status, res.headers.get("x-fleet-node")]).toEqual([502, "mini"]);
      expect(await res.json()).toEqual({ error: "image generation failed on mini: mflux failed: Error: not enough memory to load the model" });
    } finally {
      images.cliError = null;
    }
  });

  test("a model it reported but no longer has is a node that cannot serve it: a 503 naming its answer", async () => {
    const res = await post("/api/generate-image", { model: "sd3-medium", prompt: "x", width: 64, height: 64 });
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error).toBe("no node that offers it could be reached: mini: Image model 'sd3-medium' not available on this node");
  });
});

describe("vision embeddings from its vision server", () => {
  test("/api/embed of a vision model reaches its POST /embed as {model, images}: dinov2 is dinov2-vit-s14, the answer Ollama's shape", async () => {
    const [a, b] = [png(64, 32), png(16, 16)];
    const res = await post("/api/embed", { model: "dinov2", input: [b64(a), b64(b)] });
    expect([res.status, res.headers.get("x-fleet-node"), res.headers.get("x-fleet-backend")]).toEqual([200, "mini", "vision"]);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ model: "dinov2-vit-s14", embeddings: [visionVector("dinov2-vit-s14", a), visionVector("dinov2-vit-s14", b)], load_duration: 0, prompt_eval_count: 0 });
    expect(body.embeddings[0]).toHaveLength(384);
    expect(vision.requests.at(-1)).toEqual({ model: "dinov2-vit-s14", images: [b64(a), b64(b)] });
  });

  test("an input that is no image is the server's 400, passed on; a dimensions it cannot give is herd's 400", async () => {
    const res = await post("/api/embed", { model: "dinov2-vit-s14", input: "aGVsbG8=" });
    expect([res.status, ((await res.json()) as any).error]).toEqual([400, "mini's vision embedding server: Failed to decode image 0: cannot identify image file <_io.BytesIO object at 0x10f3a2b60>"]);
    const short = await post("/api/embed", { model: "dinov2-vit-s14", input: b64(png(8, 8)), dimensions: 128 });
    expect([short.status, ((await short.json()) as any).error]).toEqual([400, "dimensions: the vision model dinov2-vit-s14 gives vectors of 384 dimensions and cannot shorten them; leave dimensions out"]);
  });

  test("its inference failing (a 500) is a node that could not serve it: a 503 that names it", async () => {
    vision.inferenceError = "onnxruntime is required to serve vision embeddings";
    try {
      const res = await post("/api/embed", { model: "dinov2-vit-s14", input: b64(png(8, 8)) });
      expect([res.status, ((await res.json()) as any).error]).toEqual([503, "no node that offers it could be reached: mini: mini's vision embedding server: Inference failed: onnxruntime is required to serve vision embeddings"]);
    } finally {
      vision.inferenceError = null;
    }
  });
});

describe("transcriptions as jobs on its mlx-qwen3-asr server", () => {
  test("submitted with its API key, asked for until done, the transcript answered to the client at once", async () => {
    const polled = asr.polls;
    const res = await transcribe(wav(2.5), { language: "German" });
    expect(res.status).toBe(200);
    expect([res.headers.get("x-fleet-node"), res.headers.get("x-fleet-model"), res.headers.get("x-fleet-backend")]).toEqual(["mini", "qwen3-asr", "transcription"]);
    expect(Number(res.headers.get("x-transcription-time"))).toBeGreaterThan(0);
    expect(await res.json()).toEqual({
      text: "2.5 seconds of 16000 Hz audio.",
      language: "German",
      chunks: [{ text: "2.5 seconds of 16000 Hz audio.", start: 0, end: 2.5, chunk_index: 0, language: "German" }],
    });
    expect(asr.submissions.at(-1)).toEqual({ authorization: "Bearer herd-internal", fields: { language: "German" } });
    expect(asr.polls).toBeGreaterThan(polled);
  });

  test("a job that fails is a 502 with the server's error", async () => {
    const res = await transcribe(new TextEncoder().encode("not audio at all"));
    expect([res.status, res.headers.get("x-fleet-node")]).toEqual([502, "mini"]);
    expect(((await res.json()) as any).error).toBe("transcription failed on mini: RuntimeError: transcription failed");
  });

  test("a full queue (its 503) is a node that cannot take the job now: a 503 that names it", async () => {
    asr.maxQueueDepth = 0;
    try {
      const res = await transcribe(wav(1));
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toBe("no node that offers it could be reached: mini: mini's transcription server is busy: Server at capacity");
    } finally {
      asr.maxQueueDepth = 10;
    }
  });

  test("what it answers is checked: a status it does not have, or a result without text, is a 502", async () => {
    for (const lie of [{ status: "done" }, { status: "completed", result: { text: 5 } }, ["not", "a", "job"]]) {
      asr.lies = lie;
      try {
        const res = await transcribe(wav(1));
        expect([lie, res.status]).toEqual([lie, 502]);
        expect(((await res.json()) as any).error).toMatch(/^transcription on mini: job j_[0-9a-f]{32} answered neither a status it has nor a transcript$/);
      } finally {
        asr.lies = null;
      }
    }
  });

  test("a client that goes away is no longer waited for: herd stops asking for its job", async () => {
    asr.workMs = 2000;
    const gone = new AbortController();
    const polled = asr.polls;
    const res = transcribe(wav(1), {}, gone.signal).catch((e) => e);
    await eventually(async () => asr.polls > polled, 3000, "the job asked for");
    gone.abort();
    expect(await res).toBeInstanceOf(Error);
    // One poll may have been under way as it went; after that none.
    await Bun.sleep(700);
    const after = asr.polls;
    await Bun.sleep(1200);
    expect(asr.polls).toBe(after);
    await eventually(async () => ((await getJson(`${router.url}/dashboard/api/traces?limit=5`)).traces as any[]).find((t) => t.status === "client_disconnected"), 3000, "its trace");
  });

  test("a job past timeouts.transcriptionMs is a 502 that says so, and herd stops asking for it", async () => {
    asr.workMs = TRANSCRIPTION_MS + 3000;
    const res = await transcribe(wav(1));
    expect([res.status, res.headers.get("x-fleet-node")]).toEqual([502, "mini"]);
    expect(((await res.json()) as any).error).toBe(
      `transcription on mini timed out: no transcript within ${TRANSCRIPTION_MS} ms (timeouts.transcriptionMs); a job it took runs there to its end`,
    );
    const after = asr.polls;
    await Bun.sleep(1200);
    expect(asr.polls).toBe(after);
  });
});
