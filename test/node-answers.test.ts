// What a node answers cannot grow herd's memory (issue 27, item 4): a stand-in Ollama written here (an MLX server
// too, on the same port) sends whole (application/json) answers of 100 MB, for a streamed chat as for a whole one,
// to the OpenAI and Anthropic surfaces (and the /api/show the latter asks first), for an image, for an MLX model,
// and for the router's own poll; and a stream of small lines without end to a client that asked for one answer.
// Through a real router with server.maxNodeAnswerMb: 1, each request ends with a 502 in its route's format naming
// the cap, the node's connection is dropped (its stream cancelled long before its end), the poll says why the node
// is unreachable, and the router's RSS stays flat.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, standInOllama, startRouterProcess, tmpDir } from "./helpers.ts";

const CHAT = "m:1b";
const IMAGE = "x/z-image-turbo:latest";
const MLX = "mlx-community/Big-4bit";
const NODE_TOKEN = "node-answers-token";
const CAP_MB = 1;
const HUGE = 100 * 2 ** 20;
const utf8 = new TextEncoder();

/** What the stand-ins sent of their huge answers, and how many of those the router cut off. */
const huge = { sent: 0, cancelled: 0, started: 0 };

/** A whole answer that begins as JSON and goes on for HUGE bytes, produced as it is read; `block`: what it repeats. */
function hugeAnswer(prefix: string, block = utf8.encode("x".repeat(64 * 1024)), type = "application/json; charset=utf-8"): Response {
  huge.started++;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= HUGE) return c.close();
      c.enqueue(sent === 0 ? utf8.encode(prefix) : block);
      sent += block.length;
      huge.sent += block.length;
    },
    cancel() {
      huge.cancelled++;
    },
  });
  return new Response(body, { headers: { "content-type": type } });
}

/** NDJSON lines of an answer that never says done: 1 KB each, for HUGE bytes. */
const endlessLines = () => hugeAnswer("", utf8.encode(`${JSON.stringify({ model: CHAT, message: { role: "assistant", content: "y".repeat(1000) }, done: false })}\n`), "application/x-ndjson");

/** An Ollama (0.32.5: the last release that generates images) whose chat, show and image answers are huge; with `hugeTags`, its model list too. */
function standIn(hugeTags: boolean) {
  return standInOllama({
    models: [CHAT, IMAGE],
    version: "0.32.5",
    answer(req, path) {
      if (path === "/api/tags" && hugeTags) return hugeAnswer('{"models":[{"name":"');
      if (path === "/api/show") return hugeAnswer('{"capabilities":["completion"],"license":"');
      if (path === "/api/chat") return req.headers.get("x-herd-tags") === "lines" ? endlessLines() : hugeAnswer(`{"model":"${CHAT}","message":{"role":"assistant","content":"`);
      if (path === "/v1/chat/completions") return hugeAnswer('{"id":"c","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"');
      if (path === "/v1/images/generations") return hugeAnswer('{"created":1,"data":[{"b64_json":"');
      return null;
    },
  });
}

let node: ReturnType<typeof Bun.serve>;
let lister: ReturnType<typeof Bun.serve>;
let router: Awaited<ReturnType<typeof startRouterProcess>>;

afterAll(cleanupFile);
afterAll(() => {
  node?.stop(true);
  lister?.stop(true);
});

beforeAll(async () => {
  node = standIn(false);
  lister = standIn(true);
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(
    file,
    JSON.stringify({
      server: { maxNodeLineMb: CAP_MB, maxNodeAnswerMb: CAP_MB },
      nodes: [
        { id: "n1", ollama: `http://127.0.0.1:${node.port}`, token: NODE_TOKEN },
        { id: "lister", ollama: `http://127.0.0.1:${lister.port}` },
      ],
      heartbeat: { intervalMs: 1000 },
      features: { autoPull: false, vramFallback: false },
    }),
  );
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  // n1's agent, played here: its MLX server listens where its Ollama does.
  const models = [CHAT, IMAGE].map((name) => ({ name, model: name, size: 1e9 }));
  const heartbeat = { node_id: "n1", ollama: { reachable: true, version: "0.32.5", models_loaded: models.slice(0, 1), models_available: models }, mlx_servers: [{ port: node.port, model: MLX, status: "healthy" }] };
  const sent = await fetch(`${router.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${NODE_TOKEN}` }, body: JSON.stringify(heartbeat) });
  expect(sent.status).toBe(200);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1")?.status === "online", 5000, "n1 online");
});

afterAll(async () => {
  await router?.stop();
});

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

const post = (path: string, body: unknown, tag = "whole") =>
  fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-herd-tags": tag }, body: JSON.stringify(body) });
const ask = (content: string) => ({ model: CHAT, messages: [{ role: "user", content }] });

describe(`a whole answer past server.maxNodeAnswerMb (${CAP_MB} MB) from a node sending ${HUGE / 2 ** 20} MB`, () => {
  const before: number[] = [];
  beforeAll(() => {
    before.push(rssMb(router.proc.pid));
  });

  test.each([
    ["a streamed chat (the node answers application/json anyway)", "/api/chat", { ...ask("stream"), stream: true }, (b: any) => b.error, "whole"],
    ["a whole chat", "/api/chat", { ...ask("whole"), stream: false }, (b: any) => b.error, "whole"],
    ["an OpenAI chat completion", "/v1/chat/completions", ask("openai"), (b: any) => b.error.message, "whole"],
    ["an Anthropic message (its thinking asks /api/show first)", "/v1/messages", { ...ask("anthropic"), max_tokens: 16 }, (b: any) => b.error.message, "whole"],
    ["an image through the node's Ollama", "/api/generate-image", { model: IMAGE, prompt: "a cat", width: 64, height: 64 }, (b: any) => b.error, "whole"],
    ["an MLX model's whole answer", "/v1/chat/completions", { ...ask("mlx"), model: `mlx:${MLX}`, stream: false }, (b: any) => b.error.message, "whole"],
    ["lines without end, to a client that asked for one answer", "/api/chat", { ...ask("lines"), stream: false }, (b: any) => b.error, "lines"],
  ])("%s: a 502 in the route's format naming the cap, the node's connection dropped", async (_what, path, body, messageOf, tag) => {
    const [sent, cancelled] = [huge.sent, huge.cancelled];
    const res = await post(path, body, tag);
    expect(res.status).toBe(502);
    const message: string = messageOf(await res.json());
    expect(message).toContain(`ran past ${CAP_MB} MB (server.maxNodeAnswerMb)`);
    // The node's stream was cut off: it sent a few MB at most (what the sockets buffer), and was told so.
    await eventually(async () => huge.cancelled > cancelled, 3000, "the node's answer cancelled");
    expect(huge.sent - sent).toBeLessThan(HUGE / 4);
  });

  test("the router's poll reads at most the cap of a node's model list: the node is unreachable, and says why", async () => {
    const status = await eventually(async () => {
      const lister = (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "lister");
      return lister?.ollama?.error ? lister : null;
    }, 5000, "the lister's poll error");
    expect(status.ollama.reachable).toBe(false);
    expect(status.ollama.error).toContain(`ran past ${CAP_MB} MB (server.maxNodeAnswerMb)`);
  });

  test("the router's memory stays flat: well under one of those answers grown, for all of them and several polls", async () => {
    await Bun.sleep(3000); // a few more polls of the lister
    const grown = rssMb(router.proc.pid) - before[0]!;
    console.log(`node answers: ${huge.started} huge answers started, ${(huge.sent / 2 ** 20).toFixed(0)} MB sent in all, router RSS grew ${grown.toFixed(0)} MB`);
    expect(grown).toBeLessThan(HUGE / 2 ** 20 / 2);
    expect((await getJson(`${router.url}/healthz`)).status).toBe("ok");
  });
});

// What herd learns from a node's answers cannot be a node's lie (issue 27, item 5): a stand-in that says it decoded
// in a nanosecond but takes LIAR_MS per answer, beside two honest simulated nodes, draws almost nothing once herd
// has timed it, and a lie an older herd stored is not believed after a restart.
describe("a node that lies about its speed", () => {
  const MODEL = "llama3.2:3b";
  const LIAR_MS = 600;
  const REPLY = 20;
  const served: string[] = [];
  let honest: SimNode[] = [];
  let liar: ReturnType<typeof Bun.serve>;
  let speedy: Awaited<ReturnType<typeof startRouterProcess>> | undefined;
  let dir: string;

  /** Ollama's closing line, with what the liar claims: a nanosecond for everything. */
  const done = (content: string) => ({
    model: MODEL,
    created_at: "2026-01-01T00:00:00Z",
    message: { role: "assistant", content },
    done: true,
    done_reason: "stop",
    total_duration: 3,
    load_duration: 1,
    prompt_eval_count: 30,
    prompt_eval_duration: 1,
    eval_count: REPLY,
    eval_duration: 1,
  });

  beforeAll(async () => {
    honest = await Promise.all(["h1", "h2"].map((id) => startSimOllama({ id, models: [MODEL], loaded: [MODEL], tokensPerSecond: 200 })));
    const size = ((await (await fetch(`${honest[0]!.url}/api/tags`)).json()) as any).models[0].size;
    liar = standInOllama({
      models: [MODEL],
      size,
      async answer(req, path) {
        if (path !== "/api/chat") return null;
        const body = (await req.json()) as { stream?: boolean };
        if (body.stream === false) return Bun.sleep(LIAR_MS).then(() => Response.json(done("word ".repeat(REPLY))));
        let n = 0;
        const lines = new ReadableStream<Uint8Array>({
          async pull(c) {
            await Bun.sleep(LIAR_MS / REPLY);
            const line = ++n < REPLY ? { model: MODEL, created_at: "2026-01-01T00:00:00Z", message: { role: "assistant", content: "word " }, done: false } : done("");
            c.enqueue(utf8.encode(`${JSON.stringify(line)}\n`));
            if (n === REPLY) c.close();
          },
        });
        return new Response(lines, { headers: { "content-type": "application/x-ndjson" } });
      },
    });
    dir = tmpDir();
    writeFileSync(
      join(dir, "herd.config.json"),
      JSON.stringify({
        // Declared alike: until herd has timed the liar, it is taken to be as fast as the honest nodes.
        nodes: [
          { id: "liar", ollama: `http://127.0.0.1:${liar.port}`, hardware: { bandwidthGbps: 400 } },
          ...honest.map((h) => ({ id: h.id, ollama: h.url, hardware: { bandwidthGbps: 400 } })),
        ],
        routing: { sessionAffinity: false },
        features: { autoPull: false },
      }),
    );
  });

  afterAll(async () => {
    await speedy?.stop();
    liar?.stop(true);
    await Promise.all(honest.map((h) => h.stop()));
  });

  const start = async () => {
    speedy = await startRouterProcess(["serve", "--config", join(dir, "herd.config.json"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${speedy!.url}/fleet/status`)).fleet.nodes_online === 3, 5000, "three nodes online");
  };

  /** `n` requests one after another, streamed and whole in turn: the node each went to. */
  async function ask(n: number): Promise<string[]> {
    const nodes: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${speedy!.url}/api/chat`, {
        method: "POST",
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: `question ${served.length + i}` }], stream: i % 2 === 0, options: { num_predict: REPLY } }),
      });
      expect(res.status).toBe(200);
      await res.text();
      nodes.push(res.headers.get("x-fleet-node")!);
    }
    served.push(...nodes);
    return nodes;
  }

  test("timed by herd, the liar draws few of 24 requests one after another: the honest nodes take the rest", async () => {
    await start();
    const nodes = await ask(24);
    console.log(`learned speeds: ${nodes.join(" ")}`);
    expect(nodes.filter((n) => n === "liar").length).toBeLessThanOrEqual(3);
    const learned = await eventually(async () => (await getJson(`${speedy!.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "liar").speeds[MODEL], 3000, "the liar's speed learned");
    // Its REPLY tokens took LIAR_MS by herd's clock, whatever it said: nowhere near a billion tokens a second.
    expect(learned.decode_tps).toBeLessThan((REPLY / LIAR_MS) * 1000 * 1.5);
  }, 60_000);

  test("a lie an older herd stored is not believed after a restart: read back bounded, and the first answer replaces it", async () => {
    await speedy!.stop();
    const db = new Database(join(dir, "data", "herd.sqlite"));
    db.run("UPDATE node_speeds SET decode_tps = 2e10, prefill_tps = 3e10, load_ms = 0.000001 WHERE node_id = 'liar'");
    db.close();
    await start();
    const liarSpeeds = (await getJson(`${speedy!.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "liar").speeds[MODEL];
    expect(liarSpeeds?.decode_tps ?? null).toBeNull();
    const nodes = await ask(12);
    console.log(`after a restart: ${nodes.join(" ")}`);
    expect(nodes.filter((n) => n === "liar").length).toBeLessThanOrEqual(2);
  }, 60_000);
});
