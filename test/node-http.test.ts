// herd calls nodes' Ollama with its own HTTP/1.1 client (src/backends/http1.ts).
// Here a node that frames its answers every way HTTP/1.1 allows (chunks that
// trickle in a byte at a time with extensions and trailers, Content-Length,
// an HTTP/1.0 body that ends when the connection does, an interim 100 Continue,
// idle connections it closes without saying so) answers through a real router;
// the official ollama client must get every answer whole, and herd must keep
// its connections to the node alive between requests.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { dlopen, FFIType, ptr } from "bun:ffi";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { Ollama } from "ollama";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

setDefaultTimeout(15_000);

const MODEL = "llama3.2:3b";
const WORDS = ["Herds", " move", " together", "."];

/** What a framing case sends: the bytes of the whole answer, written in these pieces (ms apart). */
type Script = { pieces: string[]; closeAfter?: boolean };

function lines(stream: boolean): string[] {
  const done = { model: MODEL, created_at: "2026-11-30T00:00:00Z", response: "", done: true, done_reason: "stop", prompt_eval_count: 3, eval_count: WORDS.length };
  if (!stream) return [`${JSON.stringify({ ...done, response: WORDS.join("") })}\n`];
  return [...WORDS.map((w) => `${JSON.stringify({ model: MODEL, created_at: "2026-11-30T00:00:00Z", response: w, done: false })}\n`), `${JSON.stringify(done)}\n`];
}

function chunked(parts: string[]): string {
  // Chunk extensions and a trailer are legal and must be skipped.
  return `${parts.map((p) => `${Buffer.byteLength(p).toString(16)};ext=1\r\n${p}\r\n`).join("")}0\r\nX-Trailer: yes\r\n\r\n`;
}

const SCRIPTS: Record<string, (stream: boolean) => Script> = {
  // Ollama's own framing, cut into single bytes as a slow network might deliver it.
  trickle: (stream) => ({ pieces: [...`HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(lines(stream))}`] }),
  length: (stream) => {
    const body = lines(stream).join("");
    return { pieces: [`HTTP/1.1 200 OK\r\nContent-Type: application/${stream ? "x-ndjson" : "json"}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`, body] };
  },
  // A Python-style server: HTTP/1.0, no length, the body ends when the connection closes.
  http10: (stream) => ({ pieces: [`HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n`, ...lines(stream)], closeAfter: true }),
  interim: (stream) => ({ pieces: [`HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n`, chunked(lines(stream))] }),
  // A fast node: the whole chunked answer in one write, so herd reads it in one.
  oneRead: (stream) => ({ pieces: [`HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(lines(stream))}`] }),
  // Keeps the connection alive by HTTP's rules, then closes it while it idles.
  dropsIdle: (stream) => ({ ...SCRIPTS.length!(stream), closeAfter: true }),
};

interface Conn {
  buffer: Buffer;
  servedGenerate: boolean;
  /** Bytes written but not yet taken by the socket (a big answer to a reader that holds back). */
  outbox: Buffer;
}

function send(s: Socket<Conn>, text: string): void {
  s.data.outbox = Buffer.concat([s.data.outbox, Buffer.from(text)]);
  flush(s);
}

function flush(s: Socket<Conn>): void {
  if (!s.data.outbox.length) return;
  s.data.outbox = s.data.outbox.subarray(Math.max(0, s.write(s.data.outbox)));
}

/** A node that speaks just enough HTTP/1.1 for herd's poller and for /api/generate, framed as the prompt asks. */
class FramingNode {
  server!: TCPSocketListener<Conn>;
  /** Connections that carried at least one /api/generate. */
  generateConnections = 0;
  /** The images of the last /api/generate, as the node received them. */
  lastImages: string[] = [];

  start(): void {
    this.server = Bun.listen<Conn>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open: (s) => {
          s.data = { buffer: Buffer.alloc(0), servedGenerate: false, outbox: Buffer.alloc(0) };
        },
        drain: flush,
        data: (s, bytes) => {
          s.data.buffer = Buffer.concat([s.data.buffer, bytes]);
          void this.serve(s);
        },
      },
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  private async serve(s: Socket<Conn>): Promise<void> {
    const end = s.data.buffer.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = s.data.buffer.subarray(0, end).toString();
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (s.data.buffer.length < end + 4 + length) return;
    const body = s.data.buffer.subarray(end + 4, end + 4 + length).toString();
    s.data.buffer = s.data.buffer.subarray(end + 4 + length);
    const [method, path] = head.split(" ");
    if (method === "GET") return send(s, json(probe(path!)));
    // herd asks after the models a node has loaded (their trained context, their blob): this node has nothing to say.
    if (path === "/api/show") return send(s, json({ capabilities: ["completion"], model_info: {} }));
    if (!s.data.servedGenerate) this.generateConnections++;
    s.data.servedGenerate = true;
    const request = JSON.parse(body) as { prompt: string; stream?: boolean; images?: string[] };
    this.lastImages = request.images ?? [];
    const script = request.prompt === "big" ? bigAnswer() : SCRIPTS[request.prompt]!(request.stream !== false);
    for (const piece of script.pieces) {
      send(s, piece);
      if (script.pieces.length > 2) await Bun.sleep(1);
    }
    if (script.closeAfter) {
      await Bun.sleep(20); // after the answer, as an idle connection would be
      s.end();
    }
  }

  stop(): void {
    this.server.stop(true);
  }
}

function probe(path: string): unknown {
  if (path === "/api/version") return { version: "0.12.0" };
  const model = { name: MODEL, model: MODEL, size: 2_000_000_000, size_vram: 2_000_000_000, details: { parameter_size: "3.2B", quantization_level: "Q4_K_M" } };
  return { models: [model] };
}

function json(value: unknown): string {
  const body = JSON.stringify(value);
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A streamed answer of BIG_LINES lines of ~2 KB each (20 MB), all sent at once, for a client to take slowly. */
const BIG_LINES = 10_000;
function bigAnswer(): Script {
  const text = "x".repeat(2000);
  const lines = Array.from({ length: BIG_LINES }, (_, i) => `${JSON.stringify({ model: MODEL, created_at: "2026-11-30T00:00:00Z", response: `${i}:${text}`, done: false })}\n`);
  const done = `${JSON.stringify({ model: MODEL, created_at: "2026-11-30T00:00:00Z", response: "", done: true, done_reason: "stop", eval_count: BIG_LINES })}\n`;
  return { pieces: [`HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n${chunked([...lines, done])}`] };
}

const node = new FramingNode();
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let client: Ollama;

beforeAll(async () => {
  node.start();
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "framing", ollama: node.url }], features: { autoPull: false, vramFallback: false } }));
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes[0]?.status === "online", 5000, "the node online");
  client = new Ollama({ host: router.url });
});

afterAll(async () => {
  await router?.stop();
  node.stop();
});

describe("herd reads every HTTP/1.1 framing a node may use", () => {
  for (const prompt of Object.keys(SCRIPTS)) {
    test(`${prompt}: streamed and whole answers arrive whole`, async () => {
      let text = "";
      for await (const part of await client.generate({ model: MODEL, prompt, stream: true })) text += part.response;
      expect(text).toBe(WORDS.join(""));
      const whole = await client.generate({ model: MODEL, prompt, stream: false });
      expect(whole.response).toBe(WORDS.join(""));
      expect(whole.eval_count).toBe(WORDS.length);
    });
  }

  test("a connection the node closed while it idled is replaced without a retry", async () => {
    for (let i = 0; i < 3; i++) {
      await client.generate({ model: MODEL, prompt: "dropsIdle", stream: false });
      await Bun.sleep(50); // the node closes the idle connection meanwhile
    }
    const res = await fetch(`${router.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "length", stream: false }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-retries")).toBe("0");
  });
});

test("a streamed answer that arrives in one read goes to the client in one piece, its lines as the node sent them", async () => {
  const res = await fetch(`${router.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "oneRead" }) });
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  // One write with its length, not a chunked stream written line by line.
  expect(res.headers.get("transfer-encoding")).toBeNull();
  expect(await res.text()).toBe(lines(true).join(""));
});

test("a request far larger than a socket write (an 8 MB image) reaches the node whole", async () => {
  const image = Buffer.alloc(6 * 1024 * 1024, 7).toString("base64");
  const whole = await client.generate({ model: MODEL, prompt: "length", images: [image], stream: false });
  expect(whole.response).toBe(WORDS.join(""));
  expect(node.lastImages).toEqual([image]);
});

test("a client that reads slowly gets a large answer whole (herd holds the node back meanwhile), and the connection serves on", async () => {
  const res = await fetch(`${router.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "big" }) });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (let reads = 0; ; reads++) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (reads < 100) await Bun.sleep(10); // slow at first: more than herd buffers, so it stops reading from the node until the client catches up
  }
  const lines = text.trim().split("\n").map((l) => JSON.parse(l) as { response: string; done: boolean });
  expect(lines).toHaveLength(BIG_LINES + 1);
  expect(lines.slice(0, -1).every((l, i) => l.response.startsWith(`${i}:`))).toBe(true);
  expect(lines.at(-1)!.done).toBe(true);
  const after = await client.generate({ model: MODEL, prompt: "length", stream: false });
  expect(after.response).toBe(WORDS.join(""));
});

test("herd keeps its connections to a node alive between requests", async () => {
  const before = node.generateConnections;
  for (let i = 0; i < 10; i++) {
    for await (const _ of await client.generate({ model: MODEL, prompt: "length", stream: true }));
    await client.generate({ model: MODEL, prompt: "length", stream: false });
  }
  expect(node.generateConnections - before).toBeLessThanOrEqual(1);
});

/**
 * A loopback port where connecting never completes, as with a host that is off: a socket that listens with no
 * room in its queue and never accepts (the system drops further SYNs), filled by one connection of our own.
 */
async function silentPort(): Promise<{ port: number; close(): void }> {
  const libc = dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  });
  const fd = libc.symbols.socket(2 /* AF_INET */, 1 /* SOCK_STREAM */, 0);
  const address = new Uint8Array(16); // sockaddr_in: family, port 0 (any), 127.0.0.1
  address[0] = 2;
  address.set([127, 0, 0, 1], 4);
  if (libc.symbols.bind(fd, ptr(address), 16) !== 0 || libc.symbols.listen(fd, 0) !== 0) throw new Error("cannot listen on loopback");
  libc.symbols.getsockname(fd, ptr(address), ptr(new Uint32Array([16])));
  const port = (address[2]! << 8) | address[3]!;
  const filler = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
  return {
    port,
    close() {
      filler.terminate();
      libc.symbols.close(fd);
    },
  };
}

test.skipIf(process.platform !== "linux")("a node whose host answers no connection attempt costs timeouts.firstByteMs, not the system's connect timeout", async () => {
  const silent = await silentPort();
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "off", token: "node-http-off-token" }], timeouts: { firstByteMs: 500 }, features: { autoPull: false, vramFallback: false } }));
  const off = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  try {
    // The node's agent last said its Ollama was fine; since then its host went off.
    const ollama = { reachable: true, error: null, version: "0.12.0", requests_active: 0, models_loaded: [{ name: MODEL, size_gb: 2 }], models_available: [MODEL] };
    const heartbeat = { node_id: "off", ollama_url: `http://127.0.0.1:${silent.port}`, memory: { total_gb: 32, used_gb: 8, available_gb: 24, pressure: "nominal" }, ollama };
    // With its node credential: only then does a heartbeat say where the node's Ollama is.
    const sent = await fetch(`${off.url}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer node-http-off-token" },
      body: JSON.stringify(heartbeat),
    });
    expect(sent.status).toBe(200);
    const started = performance.now();
    const res = await fetch(`${off.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "length", stream: false }) });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("off: no answer within 500 ms");
    expect(performance.now() - started).toBeLessThan(3000);
  } finally {
    await off.stop();
    silent.close();
  }
});
