// Request body limits per route through a real router: JSON routes take
// server.maxBodyMb, audio uploads server.maxMediaBodyMb, heartbeats 256 KiB.
// Over the limit is a 413 in the route's own wire format, whether the body
// declares its size (refused before it is read) or streams without one
// (cut off once past the limit); the router keeps serving.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const MiB = 1024 * 1024;
const KiB = 1024;

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let url: string;

afterAll(cleanupFile);

beforeAll(async () => {
  sim = await startSimOllama({ id: "mac", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  // Small limits keep the bodies small. No transcription node: a request under the limit gets the route's own answer.
  writeFileSync(file, JSON.stringify({ server: { maxBodyMb: 1, maxMediaBodyMb: 3 }, nodes: [{ id: "mac", ollama: sim.url }], features: { autoPull: false } }));
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  url = router.url;
  await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes[0]?.status === "online", 3000, "mac online");
});

afterAll(async () => {
  await router?.stop();
  await sim?.stop();
});

/** A chat body of about `bytes` bytes, valid for each surface. */
function chatBody(bytes: number): string {
  return JSON.stringify({ model: "llama3.2:3b", max_tokens: 8, input: "hi", messages: [{ role: "user", content: "x".repeat(bytes) }], stream: false });
}

/** The same bytes without a Content-Length: streamed in 64 KiB chunks (chunked transfer encoding). */
function streamed(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 64 * KiB));
      at += 64 * KiB;
    },
  });
}

const post = (path: string, body: string | ReadableStream<Uint8Array>) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit);

const JSON_LIMIT = "request body too large: this route takes at most 1 MiB (server.maxBodyMb)";

// Each surface's error shape, checked for the 413's message.
const FORMATS: [path: string, messageOf: (body: any) => unknown][] = [
  ["/api/chat", (b) => b.error],
  ["/v1/chat/completions", (b) => b.error.code === "request_too_large" && b.error.type === "invalid_request_error" && b.error.message],
  ["/v1/responses", (b) => b.error.code === "request_too_large" && b.error.message],
  ["/v1/messages", (b) => b.type === "error" && typeof b.error.type === "string" && b.error.message],
  ["/api/generate-image", (b) => b.error],
  ["/dashboard/api/pinned-models", (b) => b.error],
];

describe("JSON routes: server.maxBodyMb", () => {
  test.each(FORMATS)("%s: declared over the limit, a 413 in its own format", async (path, messageOf) => {
    const res = await post(path, chatBody(1.5 * MiB));
    expect(res.status).toBe(413);
    expect(messageOf(await res.json())).toBe(JSON_LIMIT);
  });

  test.each(FORMATS.slice(0, 4))("%s: streamed without a length, cut off past the limit with the same 413", async (path, messageOf) => {
    const res = await post(path, streamed(chatBody(1.5 * MiB)));
    expect(res.status).toBe(413);
    expect(messageOf(await res.json())).toBe(JSON_LIMIT);
  });

  test("a body under the limit is served, declared or streamed; the router is unharmed by the refusals", async () => {
    for (const body of [chatBody(0.9 * MiB), streamed(chatBody(0.9 * MiB))]) {
      const res = await post("/api/chat", body);
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).done).toBe(true);
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});

describe("heartbeats: 256 KiB, whatever server.maxBodyMb says", () => {
  // Padded with models' entries, each within its own bound (4096 characters).
  const heartbeat = (padding: number) => JSON.stringify({ node_id: "mac", ollama: { models_available: Array.from({ length: Math.ceil(padding / 2000) }, (_, i) => ({ name: `pad${i}:1b`, notes: "x".repeat(2000) })) } });

  test("over 256 KiB, declared or streamed, is a 413 that says the limit is fixed; under it is accepted", async () => {
    for (const body of [heartbeat(300 * KiB), streamed(heartbeat(300 * KiB))]) {
      const res = await post("/heartbeat", body);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: "request body too large: this route takes at most 256 KiB (fixed for heartbeats)" });
    }
    const ok = await post("/heartbeat", heartbeat(200 * KiB));
    expect(await ok.json()).toEqual({ status: "ok", node_status: "online" });
  });
});

describe("audio uploads: server.maxMediaBodyMb", () => {
  const upload = (bytes: number) => {
    const form = new FormData();
    form.append("audio", new File([new Uint8Array(bytes)], "recording.wav", { type: "audio/wav" }));
    return fetch(`${url}/api/transcribe`, { method: "POST", body: form });
  };

  test("over the JSON limit but under the media limit reaches the route; over the media limit is a 413", async () => {
    const under = await upload(2 * MiB);
    expect(under.status).not.toBe(413);
    const over = await upload(3.5 * MiB);
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ error: "request body too large: this route takes at most 3 MiB (server.maxMediaBodyMb)" });
  });

  test("past Bun's server-wide cap (twice the largest limit) it is still a 413, from Bun itself", async () => {
    const res = await upload(7 * MiB);
    expect(res.status).toBe(413);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});
