// Parallel slots learned through a real router process over agentless nodes (no agent reports
// OLLAMA_NUM_PARALLEL, the config declares no `parallel`). "a" and "b" run an Ollama before 0.9.7, whose default
// was four slots; "a" runs one request at a time (its operator set OLLAMA_NUM_PARALLEL=1) and is the only node with
// the model loaded. herd assumes four slots, sends a burst there, sees in the answers' durations that all but the
// first waited inside the node, learns one slot (shown in /fleet/status) and sends the next burst's overflow to
// "b" once the wait on a is longer than a cold load and an answer there. A router started again on the same data
// dir knows a's one slot from the store before any answer. "c" runs a current Ollama (one slot by default) whose
// operator raised it to four: herd starts from one and, answer after answer without a wait, tries one more.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { RAISE_AFTER } from "../src/fleet/slots.ts";
import { chatBurst, cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";
const MODEL = "llama3.2:1b";
/** A model only "c" has. */
const OTHER = "qwen3:8b";
/** A release from before 0.9.7, when OLLAMA_NUM_PARALLEL defaulted to four slots. */
const OLD = "0.9.6";
/** Each answer (the sim's replies run 30–40 tokens) takes about 3 s: a's second request in line waits that long inside it. */
const TPS = 12;

let a: SimNode;
let b: SimNode;
let c: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let dir: string;
/** The router over a and b, on the data dir it keeps across restarts. */
const startRouter = async () => {
  router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.filter((n: any) => n.status === "online").length === 3, 4000, "a, b and c online");
  await eventually(async () => (await nodeStatus("a")).ollama?.models_loaded?.length === 1, 4000, "a's model seen loaded");
};

const nodeStatus = async (id: string) => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
/** Sends `n` chats at once; the node that served each. */
const burst = (n: number) => chatBurst(router.url, MODEL, n);

afterAll(cleanupFile);

beforeAll(async () => {
  [a, b, c] = await Promise.all([
    startSimOllama({ id: "a", models: [MODEL], loaded: [MODEL], numParallel: 1, tokensPerSecond: TPS, ollamaVersion: OLD }),
    startSimOllama({ id: "b", models: [MODEL], tokensPerSecond: TPS, ollamaVersion: OLD }),
    startSimOllama({ id: "c", models: [OTHER], loaded: [OTHER], numParallel: 4, tokensPerSecond: 2000 }),
  ]);
  dir = tmpDir();
  const nodes = [a, b, c].map((n) => `{ id: "${n.id}", ollama: "${n.url}" }`).join(", ");
  writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [${nodes}], ${FAST} };\n`);
  await startRouter();
});

afterAll(async () => {
  await router?.stop();
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
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

  test("the next burst's overflow goes to the other node once the wait behind a's one slot is longer than a whole request there, load included", async () => {
    // The second waits one answer (~3 s) on a: less than a cold load and an answer on b. The third would wait two.
    const served = await burst(3);
    expect(served.filter((n) => n === "a")).toHaveLength(2);
    expect(served.filter((n) => n === "b")).toHaveLength(1);
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

  test("a current Ollama starts from its release's one slot; one more is tried after answers that never waited", async () => {
    // Last: c's fast answers would teach the fleet's speeds before the bursts above. A router of its own, on a new data dir.
    dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "c", ollama: "${c.url}" }], ${FAST} };\n`);
    router = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await nodeStatus("c"))?.status === "online", 4000, "c online");
    expect((await nodeStatus("c")).capacity).toMatchObject({ parallel: 1, sources: { parallel: "prior" } });
    for (let i = 0; i < RAISE_AFTER; i++) expect(await chatBurst(router.url, OTHER, 1)).toEqual(["c"]);
    const raised = await eventually(async () => {
      const s = await nodeStatus("c");
      return s.capacity.sources.parallel === "learned" && s;
    }, 3000, "c's slot raised");
    expect(raised.capacity.parallel).toBe(2);
  }, 30_000);
});
