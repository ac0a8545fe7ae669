// Stopping the router with SIGTERM while answers stream: it refuses new
// connections at once, lets the answers in flight finish within
// server.shutdownGraceMs, cuts the rest with an error in their own format,
// writes every trace, and exits 0. A restart on the same data dir has every
// trace of every answered request.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { encodePng } from "../src/sim/png.ts";
import { eventually, getJson, herd, startRouterProcess, tmpDir } from "./helpers.ts";

setDefaultTimeout(20_000);

const MODEL = "llama3.2:3b";
const sims: SimNode[] = [];
const imagers: ReturnType<typeof Bun.serve>[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
  await Promise.all(imagers.map((s) => s.stop(true)));
});

/** A router over one sim generating `tokensPerSecond`, with `parallel` slots and the given grace. */
async function setUp(opts: { tokensPerSecond: number; parallel: number; graceMs: number }) {
  const sim = await startSimOllama({ id: "n1", models: [MODEL], loaded: [MODEL], tokensPerSecond: opts.tokensPerSecond, numParallel: opts.parallel });
  sims.push(sim);
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ server: { shutdownGraceMs: opts.graceMs }, nodes: [{ id: "n1", ollama: sim.url, parallel: opts.parallel }], features: { autoPull: false } }));
  const args = ["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")];
  const start = async () => {
    const router = await startRouterProcess(args);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).fleet.nodes_online === 1, 3000, "n1 online");
    return router;
  };
  return { sim, start };
}

type Router = Awaited<ReturnType<typeof startRouterProcess>>;

const IMAGE_MODEL = "x/z-image-turbo:latest";

/** A router over one Ollama that has an x/ image model and takes `delayMs` to draw each image. */
async function imageRouter(opts: { delayMs: number; graceMs: number }) {
  let drawing = 0;
  const imager = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/api/version") return Response.json({ version: "0.32.5" }); // the last release that draws images
      if (path === "/api/tags") return Response.json({ models: [{ name: IMAGE_MODEL, model: IMAGE_MODEL, size: 12e9, details: {} }] });
      if (path === "/api/ps") return Response.json({ models: [] });
      if (path !== "/v1/images/generations") return new Response("404 page not found", { status: 404 });
      drawing++;
      await Bun.sleep(opts.delayMs);
      return Response.json({ created: 1, data: [{ b64_json: Buffer.from(encodePng(64, 64, () => [1, 2, 3])).toString("base64") }] });
    },
  });
  imagers.push(imager);
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ server: { shutdownGraceMs: opts.graceMs }, nodes: [{ id: "n1", ollama: `http://127.0.0.1:${imager.port}` }], features: { autoPull: false } }));
  const args = ["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")];
  const start = async () => {
    const router = await startRouterProcess(args);
    await eventually(async () => (await getJson(`${router.url}/api/image-models`)).models.length === 1, 3000, "the image model");
    return router;
  };
  const generate = (router: Router) =>
    fetch(`${router.url}/api/generate-image`, { method: "POST", headers: { "x-herd-tags": "image" }, body: JSON.stringify({ model: IMAGE_MODEL, prompt: "x", width: 64, height: 64 }) });
  const drawn = () => eventually(async () => drawing > 0, 3000, "the imager drawing");
  return { start, generate, drawn };
}

/** Sends SIGTERM and returns the exit code and how long after the signal it came. */
async function sigterm(router: Router): Promise<{ code: number; ms: number }> {
  const t0 = performance.now();
  router.proc.kill("SIGTERM");
  const timer = setTimeout(() => router.proc.kill("SIGKILL"), 15_000);
  const code = await router.proc.exited;
  clearTimeout(timer);
  return { code, ms: performance.now() - t0 };
}

/** Resolves once a new connection to `url` is refused. */
async function refused(url: string): Promise<true> {
  return eventually(async () => (await fetch(`${url}/healthz`).then(() => false, () => true)) || null, 2000, "new connections refused");
}

async function tracesOf(url: string): Promise<any[]> {
  return (await getJson(`${url}/dashboard/api/traces?limit=1000`)).traces;
}

/** A streamed /api/generate of `tokens` tokens, read to its end: its lines, parsed. */
async function generate(url: string, tokens: number, tag: string, onFirst: () => void = () => {}): Promise<any[]> {
  const res = await fetch(`${url}/api/generate`, {
    method: "POST",
    headers: { "x-herd-tags": tag },
    body: JSON.stringify({ model: MODEL, prompt: "count", options: { num_predict: tokens } }),
  });
  const lines: any[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of res.body!) {
    buffer += decoder.decode(chunk, { stream: true });
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const p of parts.filter(Boolean)) {
      lines.push(JSON.parse(p));
      if (lines.length === 1) onFirst();
    }
  }
  return lines;
}

describe("SIGTERM", () => {
  test("mid-stream: no new connection, answers in flight finish, every trace is written, exit 0; a restart has them all", async () => {
    const { start } = await setUp({ tokensPerSecond: 40, parallel: 4, graceMs: 5000 });
    const router = await start();
    const client = new Ollama({ host: router.url, headers: { "x-herd-tags": "before" } });
    for (let i = 0; i < 20; i++) {
      const answer = await client.generate({ model: MODEL, prompt: `question ${i}`, stream: false, options: { num_predict: 2 } });
      expect(answer.done).toBe(true);
    }
    // Three streams of 40 tokens at 40 tokens/s: about a second each, well within the grace period.
    let started = 0;
    const streams = Array.from({ length: 3 }, (_, i) => generate(router.url, 40, `stream-${i}`, () => started++));
    await eventually(async () => started === 3, 3000, "the streams to start");
    const stopped = sigterm(router);
    await refused(router.url);
    for (const lines of await Promise.all(streams)) {
      expect(lines.at(-1)).toMatchObject({ done: true, eval_count: 40 });
      expect(lines.filter((l) => l.error)).toEqual([]);
    }
    const { code, ms } = await stopped;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(5000);
    expect(router.output()).toMatch(/SIGTERM: stopping/);
    expect(router.output()).toMatch(/letting 3 request\(s\) in flight finish, for up to 5000 ms/);

    const again = await start();
    const traces = await tracesOf(again.url);
    expect(traces).toHaveLength(23);
    expect(traces.every((t) => t.status === "completed")).toBe(true);
    expect(traces.filter((t) => t.tags.includes("before"))).toHaveLength(20);
    await sigterm(again);
  });

  test("past the grace period: streams end with an error in their own format, a request still queued gets a 503; traces say so; exit 0", async () => {
    const GRACE_MS = 600;
    // One slot: the first stream holds it for seconds, the OpenAI request waits in the queue behind it.
    const { start } = await setUp({ tokensPerSecond: 10, parallel: 1, graceMs: GRACE_MS });
    const router = await start();
    let first = false;
    const ollamaStream = (async () => {
      const client = new Ollama({ host: router.url, headers: { "x-herd-tags": "cut-stream" } });
      for await (const _ of await client.generate({ model: MODEL, prompt: "a long story", stream: true, options: { num_predict: 200 } })) first = true;
    })().then(
      () => null,
      (e: Error) => e,
    );
    await eventually(async () => first, 3000, "the stream to start");
    const queued = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-herd-tags": "cut-queued" } })
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
      .then(
        () => null,
        (e: Error) => e,
      );
    await eventually(async () => (await getJson(`${router.url}/fleet/queue`)).pending === 1, 3000, "the request to queue");

    const stopped = sigterm(router);
    const [streamError, queuedError] = await Promise.all([ollamaStream, queued]);
    const message = `herd is shutting down and this request did not finish within server.shutdownGraceMs (${GRACE_MS} ms); retry it`;
    expect(streamError?.message).toBe(message);
    expect(queuedError).toBeInstanceOf(OpenAI.APIError);
    expect((queuedError as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect(queuedError!.message).toContain(message);
    const { code, ms } = await stopped;
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(GRACE_MS - 50);
    expect(ms).toBeLessThan(GRACE_MS + 3000);

    const again = await start();
    const traces = await tracesOf(again.url);
    expect(traces.find((t) => t.tags.includes("cut-stream"))).toMatchObject({ status: "incomplete", node_id: "n1", error_message: message });
    expect(traces.find((t) => t.tags.includes("cut-queued"))).toMatchObject({ status: "failed", node_id: null, error_message: message });
    await sigterm(again);
  });

  test("an image job in flight is drained like a stream: it finishes within the grace period, and its trace is written", async () => {
    const { start, generate, drawn } = await imageRouter({ delayMs: 1000, graceMs: 5000 });
    const router = await start();
    const image = generate(router);
    await drawn();
    const stopped = sigterm(router);
    await refused(router.url);
    const res = await image;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect((await stopped).code).toBe(0);
    expect(router.output()).toMatch(/letting 1 request\(s\) in flight finish, for up to 5000 ms/);

    const again = await start();
    expect(await tracesOf(again.url)).toMatchObject([{ tags: ["image"], status: "completed", node_id: "n1" }]);
    await sigterm(again);
  });

  test("an image job past the grace period is cut like a queued request: a 503 with Retry-After, and a trace that says so", async () => {
    const GRACE_MS = 600;
    const { start, generate, drawn } = await imageRouter({ delayMs: 10_000, graceMs: GRACE_MS });
    const router = await start();
    const image = generate(router);
    await drawn();
    const stopped = sigterm(router);
    const res = await image;
    const message = `herd is shutting down and this request did not finish within server.shutdownGraceMs (${GRACE_MS} ms); retry it`;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(((await res.json()) as any).error).toBe(message);
    const { code, ms } = await stopped;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(GRACE_MS + 3000);

    const again = await start();
    expect(await tracesOf(again.url)).toMatchObject([{ tags: ["image"], status: "failed", node_id: null, error_message: message }]);
    await sigterm(again);
  });

  test("server.shutdownGraceMs is checked like every duration", async () => {
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    writeFileSync(file, JSON.stringify({ server: { shutdownGraceMs: -1 } }));
    const checked = await herd(["check-config", file]);
    expect(checked.code).toBe(1);
    expect(checked.stdout + checked.stderr).toContain("server.shutdownGraceMs: expected a duration in ms ≥ 0");
  });
});
