// Every request bounded in time and memory, whatever the node or the client does (issue 15: 6, 7,
// 10, 11): a fake node written here misbehaves on cue (the prompt names the fault), through a real
// router with small limits. Each time the client gets an error in its own format soon, the trace
// says why, and the node's one slot is free again for the next request.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { eventually, getJson, herd, startRouterProcess, tmpDir } from "./helpers.ts";

setDefaultTimeout(15_000);

const MODEL = "m:1b";
const LIMITS = { generationMs: 2500, idleMs: 400, clientReadMs: 400, firstByteMs: 1500, connectMs: 300 };
const MAX_LINE_MB = 0.25;
const NODE_TOKEN = "fleet-token";

const line = (content: string, done = false) =>
  `${JSON.stringify({ model: MODEL, created_at: "2026-01-01T00:00:00Z", message: { role: "assistant", content }, done, ...(done ? { done_reason: "stop", prompt_eval_count: 1, eval_count: 1 } : {}) })}\n`;
const utf8 = new TextEncoder();

/** A stream that calls `next` until it returns null or the reader goes away. */
function ndjson(next: (c: ReadableStreamDefaultController<Uint8Array>) => Promise<boolean>): Response {
  let gone = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      try {
        if (gone || !(await next(c))) c.close();
      } catch {
        gone = true;
      }
    },
    cancel() {
      gone = true;
    },
  });
  return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
}

/** What the fake node does for a prompt that names a fault; anything else gets a short answer. */
const faults: Record<string, () => Response> = {
  // One whole line, then a byte at a time, never a newline: bytes keep coming, lines do not.
  drip: () => {
    let sent = false;
    return ndjson(async (c) => {
      if (!sent) c.enqueue(utf8.encode(line("a")));
      else await Bun.sleep(50), c.enqueue(utf8.encode("x"));
      sent = true;
      return true;
    });
  },
  // A line every 100 ms, for ever.
  forever: () => ndjson(async (c) => (await Bun.sleep(100), c.enqueue(utf8.encode(line("more"))), true)),
  // 16 KB lines as fast as they are taken.
  flood: () => ndjson(async (c) => (c.enqueue(utf8.encode(line("x".repeat(16_384)))), true)),
  // One whole line, then one that never ends, as fast as it is taken.
  endless: () => {
    let sent = false;
    return ndjson(async (c) => {
      c.enqueue(utf8.encode(sent ? "y".repeat(65_536) : `${line("a")}{"model":"${MODEL}","message":{"content":"`));
      sent = true;
      return true;
    });
  },
  // A streamed answer for a stream:false request, which then breaks off.
  streams: () => {
    let n = 0;
    return ndjson(async (c) => {
      if (n++ === 0) return c.enqueue(utf8.encode(line("part one "))), true;
      c.enqueue(utf8.encode(`${JSON.stringify({ error: "the model crashed" })}\n`));
      return false;
    });
  },
};

let node: ReturnType<typeof Bun.serve>;
let router: Awaited<ReturnType<typeof startRouterProcess>>;

beforeAll(async () => {
  node = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/api/version") return Response.json({ version: "0.14.0" });
      if (path === "/api/tags") return Response.json({ models: [{ name: MODEL, model: MODEL, size: 1e9, details: { parameter_size: "1B" } }] });
      if (path === "/api/ps") return Response.json({ models: [{ name: MODEL, model: MODEL, size: 1e9, size_vram: 1e9 }] });
      if (path !== "/api/chat") return new Response("404 page not found", { status: 404 });
      const body = (await req.json()) as { messages: { content: string }[]; stream?: boolean };
      const fault = faults[body.messages.at(-1)!.content];
      if (fault) return fault();
      return body.stream === false ? new Response(line("hello", true)) : new Response(line("hello") + line("", true), { headers: { "content-type": "application/x-ndjson" } });
    },
  });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(
    file,
    JSON.stringify({
      server: { maxNodeLineMb: MAX_LINE_MB },
      auth: { nodeToken: NODE_TOKEN },
      nodes: [{ id: "n1", ollama: `http://127.0.0.1:${node.port}`, parallel: 1 }],
      timeouts: LIMITS,
      heartbeat: { intervalMs: 200 },
      features: { autoPull: false, vramFallback: false },
    }),
  );
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/api/tags`)).models.length === 1, 5000, "the model listed");
});

afterAll(() => node?.stop(true));

const chat = (prompt: string, stream: boolean, tag: string) =>
  fetch(`${router.url}/api/chat`, { method: "POST", headers: { "x-herd-tags": tag }, body: JSON.stringify({ model: MODEL, stream, messages: [{ role: "user", content: prompt }] }) });

/** Reads a streamed answer to its end: its lines and how long it took. */
async function streamed(prompt: string, tag: string) {
  const t0 = performance.now();
  const res = await chat(prompt, true, tag);
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  return { status: res.status, lines, ms: performance.now() - t0 };
}

async function traceOf(tag: string): Promise<any> {
  return eventually(async () => (await getJson(`${router.url}/dashboard/api/traces?limit=50`)).traces.find((t: any) => t.tags.includes(tag)), 3000, `the trace tagged ${tag}`);
}

/** The node's one slot is free: nothing in flight, and a normal request is answered at once. */
async function slotFree() {
  await eventually(async () => (await getJson(`${router.url}/fleet/queue`)).queues[`n1:${MODEL}`]?.in_flight === 0, 3000, "the slot released");
  const res = await chat("hi", false, "after");
  expect(res.status).toBe(200);
  expect(((await res.json()) as any).message.content).toBe("hello");
}

describe("a node that never finishes", () => {
  test("a node that drips bytes without ending a line is cut after timeouts.idleMs, as if silent", async () => {
    const r = await streamed("drip", "drip");
    expect(r.ms).toBeLessThan(LIMITS.generationMs);
    expect(r.lines.at(-1).error).toContain(`no whole line from the node for ${LIMITS.idleMs} ms`);
    expect((await traceOf("drip")).status).toBe("failed");
    await slotFree();
  });

  test("a stream that goes on for ever ends at timeouts.generationMs with an error, and frees its slot", async () => {
    const r = await streamed("forever", "forever");
    expect(r.status).toBe(200);
    expect(r.lines.length).toBeGreaterThan(5);
    expect(r.ms).toBeGreaterThanOrEqual(LIMITS.generationMs - 100);
    expect(r.ms).toBeLessThan(LIMITS.generationMs + 1500);
    expect(r.lines.at(-1).error).toContain("timeouts.generationMs");
    const trace = await traceOf("forever");
    expect(trace.status).toBe("incomplete");
    expect(trace.error_message).toContain("timeouts.generationMs");
    await slotFree();
  });

  test("a line longer than server.maxNodeLineMb ends the answer with an error, not herd's memory", async () => {
    const r = await streamed("endless", "endless");
    expect(r.ms).toBeLessThan(LIMITS.generationMs);
    expect(r.lines[0].message.content).toBe("a");
    expect(r.lines.at(-1).error).toContain(`a line of more than ${MAX_LINE_MB * 2 ** 20} bytes (server.maxNodeLineMb)`);
    expect((await traceOf("endless")).status).toBe("failed");
    await slotFree();
  });
});

describe("a client that stops reading", () => {
  test("loses its slot after timeouts.clientReadMs: the stream is cut and the next request is served", async () => {
    const port = Number(new URL(router.url).port);
    const socket = connect({ host: "127.0.0.1", port });
    await new Promise((resolve) => socket.once("connect", resolve));
    const body = JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "flood" }] });
    socket.write(`POST /api/chat HTTP/1.1\r\nHost: x\r\nX-Herd-Tags: stalled\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    socket.pause(); // and never reads again
    try {
      await eventually(async () => (await getJson(`${router.url}/fleet/queue`)).queues[`n1:${MODEL}`]?.in_flight === 1, 3000, "the flood under way");
      const t0 = performance.now();
      const res = await chat("hi", false, "behind");
      expect(res.status).toBe(200);
      expect(performance.now() - t0).toBeLessThan(LIMITS.firstByteMs);
      const trace = await traceOf("stalled");
      expect(trace.status).toBe("client_disconnected");
      expect(trace.error_message).toContain("timeouts.clientReadMs");
    } finally {
      socket.destroy();
    }
  });
});

describe("a non-streaming client", () => {
  test("gets one error, not a broken 200, from a node that streams for stream:false and fails (Ollama)", async () => {
    const res = await chat("streams", false, "ollama-whole");
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(JSON.parse(await res.text())).toEqual({ error: "the model crashed" });
    await slotFree();
  });

  test("gets one error in OpenAI's format, never two bodies", async () => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: false, messages: [{ role: "user", content: "streams" }] }),
    });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const body = JSON.parse(await res.text());
    expect(body.error.message).toBe("the model crashed");
    expect(body.choices).toBeUndefined();
    await slotFree();
  });
});

describe("control characters in ids", () => {
  test("a heartbeat whose node_id holds CR/LF is refused with a 400 naming node_id, node credential or not", async () => {
    const res = await fetch(`${router.url}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${NODE_TOKEN}` },
      body: JSON.stringify({ node_id: "evil\r\nX-Forged: 1", ollama_url: `http://127.0.0.1:${node.port}` }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("node_id");
    expect((await getJson(`${router.url}/fleet/status`)).nodes.map((n: any) => n.node_id)).toEqual(["n1"]);
  });

  test("a config name with a control character is refused at check-config", async () => {
    const file = join(tmpDir(), "herd.config.json");
    writeFileSync(file, JSON.stringify({ modelMap: { "gpt-4\nforged": MODEL } }));
    const r = await herd(["check-config", file]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain("control characters");
  });
});
