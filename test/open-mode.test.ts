// Open mode (no node credential in the config): anyone who reaches the router may send a declared node's
// heartbeat. Such a heartbeat proves nothing, so it must not choose where herd sends prompts, nor take a node
// out of service, nor say what a model's name is while a node herd trusts holds it; for a node herd polls it is
// a sign of its agent's life and nothing more; its strings never forge a log line. herd says at start-up what
// open mode allows. A real router over a simulated node.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimMlx, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
const MODEL = "llama3.2:3b";
/** On studio's disk, not loaded: a machine of 1 GB could not take it (5 GB). */
const BIG = "qwen3:8b";
const EMBEDDER = "nomic-embed-text";
/** The MLX server the config declares on studio. */
const DECLARED_MLX = "mlx-community/Llama-3.2-3B-Instruct-4bit";

let studio: SimNode;
let mlx: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
/** Every request the attacker's "Ollama" was sent: a prompt there is a takeover. */
const stolen: string[] = [];
let attacker: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  studio = await startSimOllama({ id: "studio", models: [MODEL, BIG, EMBEDDER], loaded: [MODEL, EMBEDDER] });
  mlx = await startSimMlx({ id: "studio-mlx", model: DECLARED_MLX });
  attacker = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (stolen.push(`${req.method} ${new URL(req.url).pathname}`), Response.json({ models: [] })) });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  // mini and air are the usual agent entries: an id, no address.
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "mini" }, { id: "studio", ollama: studio.url, mlx: [{ model: DECLARED_MLX, port: mlx.port }] }, { id: "air" }], heartbeat: FAST, features: { autoPull: false, visionEmbedding: true } }));
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await nodeOf("studio"))?.status === "online", 3000, "studio online");
});

afterAll(async () => {
  await router?.stop();
  await studio?.stop();
  await mlx?.stop();
  await attacker?.stop(true);
});
afterAll(cleanupFile);

const nodeOf = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const heartbeat = (body: unknown) => fetch(`${router.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const post = (path: string, body: unknown) => fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const chat = (model: string) => post("/api/chat", { model, stream: false, messages: [{ role: "user", content: "my secret plan" }] });
/** The status and the node that answered; the body read. */
const served = async (res: Promise<Response>) => {
  const r = await res;
  await r.arrayBuffer();
  return [r.status, r.headers.get("x-fleet-node")];
};

test("start-up says which nodes are open and what anyone may then do", async () => {
  await router.waitFor(/no node credential for mini, studio, air \(open mode\): .*cannot set where herd sends its prompts.*herd node --enroll/);
});

test("an unauthenticated heartbeat cannot set the Ollama URL of a declared node that has none", async () => {
  const attackerUrl = `http://127.0.0.1:${attacker.port}`;
  const ollama = { reachable: true, models_loaded: [{ name: "bait:1b", size_gb: 1 }], models_available: ["bait:1b"] };
  for (let i = 0; i < 3; i++) expect((await heartbeat({ node_id: "mini", ollama_url: attackerUrl, ollama })).status).toBe(200);
  const mini = await nodeOf("mini");
  // The address comes from where the heartbeat came from, at Ollama's port, never from its body.
  expect(mini.ollama_url).toBe("http://127.0.0.1:11434");
  await chat("bait:1b");
  expect(stolen).toEqual([]);
});

test("an unauthenticated heartbeat cannot drain a polled node, empty its models or say it is down", async () => {
  const down = { reachable: false, error: "gone", models_loaded: [], models_available: [] };
  for (let i = 0; i < 3; i++) {
    expect((await heartbeat({ node_id: "studio", ollama_url: `http://127.0.0.1:${attacker.port}`, draining: true, ollama: down })).status).toBe(200);
    const res = await chat(MODEL);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fleet-node")).toBe("studio");
  }
  const node = await nodeOf("studio");
  expect(node).toMatchObject({ status: "online", draining: false, source: "poll", ollama_url: studio.url });
  expect(node.ollama.models_available).toEqual([MODEL, BIG, `${EMBEDDER}:latest`]);
  expect(stolen).toEqual([]);
});

test("an unauthenticated heartbeat's MLX or embedding server cannot take a model an Ollama of the fleet holds, healthy or stopped", async () => {
  const port = attacker.port;
  const embedding = { models_available: [{ name: EMBEDDER }] };
  for (const status of ["healthy", "stopped"]) {
    const claim = { node_id: "mini", mlx_servers: [{ port, model: MODEL, status }], text_embedding: embedding, text_embedding_port: port, vision_embedding: embedding, vision_embedding_port: port };
    expect((await heartbeat(claim)).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      expect(await served(chat(MODEL))).toEqual([200, "studio"]);
      expect(await served(post("/api/embed", { model: EMBEDDER, input: ["my secret plan"] }))).toEqual([200, "studio"]);
    }
  }
  expect(stolen).toEqual([]);
});

test("an unauthenticated heartbeat for a node herd polls is only a sign of its agent's life: its memory, undeclared services, labels and version change nothing, and its silence is logged as the leave", async () => {
  const port = attacker.port;
  const hardware = { memory_total_gb: 1, cores_physical: 1, chip: "Apple M1", memory_bandwidth_gbps: 1, arch: "arm64" };
  const beat = {
    node_id: "studio",
    agent_version: "0.0.1-fake",
    config_hash: "not-the-routers",
    config_error: "herd.config.ts: forged",
    labels: { owner: "attacker" },
    memory: { total_gb: 1, used_gb: 1, available_gb: 0, pressure: "critical" },
    hardware,
    thermal: { state: "critical" },
    mlx_servers: [{ port, model: "org/studio-mlx", status: "healthy" }],
    image_models: [{ name: "x/z-image-turbo", backend: "mflux" }],
    image_port: port,
  };
  // The earlier tests' agent for studio has left (their heartbeats' silence is logged as the leave too).
  const said = (line: RegExp) => router.output().match(line)?.length ?? 0;
  await eventually(async () => said(/node studio: agent \S+ joined/g) === said(/node studio: agent left/g), 4000, "studio's earlier agent gone");
  // Sent once, and never again.
  expect((await heartbeat(beat)).status).toBe(200);
  await router.waitFor(/node studio: agent 0\.0\.1-fake joined from 127\.0\.0\.1 without a credential/);
  expect(await served(chat(BIG))).toEqual([200, "studio"]);
  expect(await served(chat("org/studio-mlx"))).toEqual([404, "none"]);
  const node = await nodeOf("studio");
  expect(node).toMatchObject({ agent_version: null, config_hash: null, config_error: null, version_drift: false, config_drift: false, labels: {}, memory: null, hardware: null, mlx_servers: [], source: "poll" });
  await eventually(async () => said(/node studio: agent left \(no heartbeat for \d+ s\)/g) === said(/node studio: agent \S+ joined/g), 4000, "the leave logged");
  expect(await served(chat(BIG))).toEqual([200, "studio"]);
  expect(stolen).toEqual([]);
}, 10_000);

test("of a polled node's services, an unauthenticated heartbeat says only the state of those the config declares, at their ports", async () => {
  const declared = { port: mlx.port, model: DECLARED_MLX, status: "healthy" };
  const claims = [declared, { ...declared, port: attacker.port }, { port: attacker.port, model: "org/undeclared", status: "healthy" }];
  expect((await heartbeat({ node_id: "studio", mlx_servers: claims })).status).toBe(200);
  const ask = (model: string) => post("/v1/chat/completions", { model, max_tokens: 5, messages: [{ role: "user", content: "my secret plan" }] });
  expect(await served(ask(`mlx:${DECLARED_MLX}`))).toEqual([200, "studio"]);
  expect(await served(ask("mlx:org/undeclared"))).toEqual([404, "none"]);
  expect((await nodeOf("studio")).mlx_servers).toEqual([expect.objectContaining(declared)]);
  expect(stolen).toEqual([]);
});

test("a heartbeat's strings cannot forge a log line or carry a terminal's escapes, and each is bounded", async () => {
  const forged = "1.0\r\n00:00:00 info  node studio: forged\u001b[2K\u009b2K\u2028";
  expect((await heartbeat({ node_id: "air", agent_version: forged, labels: { "a\nb": "c\rd" } })).status).toBe(200);
  await router.waitFor(/node air: agent 1\.0 .*joined/);
  const lines = router.output().split("\n");
  expect(lines.filter((l) => l.includes("forged") && !l.includes("node air: agent"))).toEqual([]);
  expect(router.output()).not.toMatch(/[\u001b\u009b\u2028]/);
  const air = await nodeOf("air");
  expect(air.agent_version).not.toMatch(/[\p{Cc}\u2028]/u);
  expect(Object.entries(air.labels).flat().join("")).not.toMatch(/\p{Cc}/u);
  // Past its bound, a string is refused, naming the field.
  const long = await heartbeat({ node_id: "air", agent_version: "v".repeat(10_000) });
  expect(long.status).toBe(400);
  expect(((await long.json()) as any).error).toContain("agent_version:");
});
