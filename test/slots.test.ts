// Parallel slots learned through a real router process over two agentless nodes (no agent reports
// OLLAMA_NUM_PARALLEL, the config declares no `parallel`): "a" runs one request at a time and is
// the only node with the model loaded. herd assumes four slots, sends a burst there, sees in the
// answers' durations that all but the first waited inside the node, learns one slot (shown in
// /fleet/status) and sends the next burst's overflow to "b", a cold load that finishes sooner. A router started
// again on the same data dir knows a's one slot from the store before any answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { chatBurst, cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";
const MODEL = "llama3.2:1b";
/** Each answer (the sim's replies run 30–40 tokens) takes about 3 s: a's second request in line waits that long inside it. */
const TPS = 12;

let a: SimNode;
let b: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let dir: string;
/** The router over a and b, on the data dir it keeps across restarts. */
const startRouter = async () => {
  router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.filter((n: any) => n.status === "online").length === 2, 4000, "a and b online");
  await eventually(async () => (await nodeStatus("a")).ollama?.models_loaded?.length === 1, 4000, "a's model seen loaded");
};

const nodeStatus = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
/** Sends `n` chats at once; the node that served each. */
const burst = (n: number) => chatBurst(router.url, MODEL, n);

afterAll(cleanupFile);

beforeAll(async () => {
  [a, b] = await Promise.all([
    startSimOllama({ id: "a", models: [MODEL], loaded: [MODEL], numParallel: 1, tokensPerSecond: TPS }),
    startSimOllama({ id: "b", models: [MODEL], tokensPerSecond: TPS }),
  ]);
  dir = tmpDir();
  writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "a", ollama: "${a.url}" }, { id: "b", ollama: "${b.url}" }], ${FAST} };\n`);
  await startRouter();
});

afterAll(async () => {
  await router?.stop();
  await Promise.all([a?.stop(), b?.stop()]);
});

describe("an agentless node's parallel slots", () => {
  test("a prior until its answers show otherwise", async () => {
    expect((await nodeStatus("a")).capacity).toMatchObject({ parallel: 4, sources: { parallel: "prior" } });
  });

  test("a burst on the one node that has the model waits inside it: herd learns it runs one at a time", async () => {
    // Nothing says a has fewer slots yet, so the model's only resident node gets all of them.
    expect(await burst(3)).toEqual(["a", "a", "a"]);
    const a = await eventually(async () => {
      const s = await nodeStatus("a");
      return s.capacity.sources.parallel === "learned" && s;
    }, 3000, "a's slots learned");
    expect(a.capacity.parallel).toBe(1);
    expect((await nodeStatus("b")).capacity).toMatchObject({ parallel: 4, sources: { parallel: "prior" } });
  }, 30_000);

  test("the next burst's overflow goes to the other node rather than queueing behind a's one slot", async () => {
    const served = await burst(3);
    expect(served.filter((n) => n === "a")).toHaveLength(1);
    expect(served.filter((n) => n === "b")).toHaveLength(2);
  }, 30_000);

  test("a restart on the same data dir keeps what was learned: shown at once, and the burst's overflow goes to b again", async () => {
    await router.stop();
    b.patch({ loaded: [] }); // b as it was before the first burst: only a has the model
    await startRouter();
    // Before any answer: from the store, not learned again.
    expect((await nodeStatus("a")).capacity).toMatchObject({ parallel: 1, sources: { parallel: "learned" } });
    expect((await nodeStatus("b")).capacity).toMatchObject({ parallel: 4, sources: { parallel: "prior" } });
    const served = await burst(3);
    expect(served.filter((n) => n === "a")).toHaveLength(1);
    expect(served.filter((n) => n === "b")).toHaveLength(2);
  }, 30_000);
});
