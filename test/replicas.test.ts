// A second replica warmed by the finish-time estimate, through a real router process over two agentless simulated
// nodes: "a" holds the model loaded on its one slot, "b" has it on disk only. A burst queues on a (each request
// alone would not finish sooner after a cold load on b by enough to go there), herd sees the next one would, warms
// the model on b with no request waiting on the load, and the next burst is shared between the two.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { chatBurst, cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const MODEL = "llama3.2:1b";
// Answers of 30–40 tokens: about 0.35 s each, against a predicted cold load of about 0.65 s on b.
const TPS = 100;

let a: SimNode;
let b: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;

/** Sends `n` chats at once; the node that served each. */
const burst = (n: number) => chatBurst(router.url, MODEL, n);
const loadedOn = async (id: string) =>
  ((await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id).ollama?.models_loaded ?? []).some((m: any) => m.name === MODEL);

afterAll(cleanupFile);

beforeAll(async () => {
  [a, b] = await Promise.all([
    startSimOllama({ id: "a", models: [MODEL], loaded: [MODEL], numParallel: 1, tokensPerSecond: TPS }),
    startSimOllama({ id: "b", models: [MODEL], numParallel: 1, tokensPerSecond: TPS }),
  ]);
  const dir = tmpDir();
  const nodes = [a, b].map((n) => JSON.stringify({ id: n.id, ollama: n.url, parallel: 1 }));
  writeFileSync(
    join(dir, "herd.config.ts"),
    `export default { nodes: [${nodes.join(", ")}], heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }, rebalancer: { intervalMs: 200 } };\n`,
  );
  router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.filter((n: any) => n.status === "online").length === 2, 4000, "a and b online");
  await eventually(() => loadedOn("a"), 4000, "a's model seen loaded");
  // One answer teaches herd the model's speed on a and its usual reply length.
  expect(await burst(1)).toEqual(["a"]);
});

afterAll(async () => {
  await router?.stop();
  await Promise.all([a?.stop(), b?.stop()]);
});

test("a queue on a single-slot node gets a second replica warmed elsewhere, and later requests go there", async () => {
  const first = burst(4);
  // Loaded on b by herd's warm while a's queue drains: no request of the burst went there to pay for it.
  await eventually(() => loadedOn("b"), 5000, "the model warmed on b");
  expect(await first).toEqual(["a", "a", "a", "a"]);
  expect(b.state().counters.loads).toBe(1);
  // A replica stays while it is used, for the node's own keep-alive after its last request (Ollama's 5 minutes), not for ever as a pin does.
  const ps = (await getJson(`${b.url}/api/ps`)).models.find((m: any) => m.name === MODEL);
  expect(Date.parse(ps.expires_at) - Date.now()).toBeLessThan(10 * 60_000);
  const next = await burst(4);
  expect(next.filter((n) => n === "b").length).toBeGreaterThanOrEqual(1);
  expect(next.filter((n) => n === "a").length).toBeGreaterThanOrEqual(1);
}, 30_000);
