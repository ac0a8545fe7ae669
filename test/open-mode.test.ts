// Open mode (no node credential in the config): anyone who reaches the router may send a declared node's
// heartbeat. Such a heartbeat proves nothing, so it must not choose where herd sends prompts, nor take a node
// out of service; herd says at start-up what open mode allows. A real router over a simulated node.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
const MODEL = "llama3.2:3b";

let studio: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
/** Every request the attacker's "Ollama" was sent: a prompt there is a takeover. */
const stolen: string[] = [];
let attacker: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  studio = await startSimOllama({ id: "studio", models: [MODEL], loaded: [MODEL] });
  attacker = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (stolen.push(`${req.method} ${new URL(req.url).pathname}`), Response.json({ models: [] })) });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  // mini is the usual agent entry: an id, no address.
  writeFileSync(file, JSON.stringify({ nodes: [{ id: "mini" }, { id: "studio", ollama: studio.url }], heartbeat: FAST, features: { autoPull: false } }));
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await nodeOf("studio"))?.status === "online", 3000, "studio online");
});

afterAll(async () => {
  await router?.stop();
  await studio?.stop();
  await attacker?.stop(true);
});
afterAll(cleanupFile);

const nodeOf = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
const heartbeat = (body: unknown) => fetch(`${router.url}/heartbeat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const chat = (model: string) =>
  fetch(`${router.url}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, stream: false, messages: [{ role: "user", content: "my secret plan" }] }) });

test("start-up says which nodes are open and what anyone may then do", async () => {
  await router.waitFor(/no node credential for mini, studio \(open mode\): .*cannot set where herd sends its prompts.*herd node --enroll/);
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
  expect(node.ollama.models_available).toEqual([MODEL]);
  expect(stolen).toEqual([]);
});
