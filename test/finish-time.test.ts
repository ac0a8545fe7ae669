// Three rules of routing.strategy "finish-time" (the default; fleet/finish-time.ts, router/finish-order.ts), through
// a real router process over simulated Ollama nodes, read from the node that served each request (X-Fleet-Node) and
// the estimate it was chosen by (X-Fleet-Prediction-Breakdown):
// - explore: a node that has the model loaded but whose speed for it herd has not learned gets one in EXPLORE_EVERY
//   of the model's requests, if it would cost at most EXPLORE_RATIO × the best (one of unknown bandwidth, at the
//   fleet's speed); once learned, it is judged on it;
// - eviction pricing: a load that would evict a model asked for within RECENT_USE_MS pays that model's reload in
//   the choice, so it goes where the model it evicts was not asked for; and herd expects the victim Ollama picks
//   (by its weights' blob path, /api/show's FROM, not the least recently used), a fourth model's included; a node of
//   unknown memory, once it has unloaded a model for room, is taken to hold the most it held; the requests waiting at
//   herd for a model a load evicts are routed again, and so is one that comes while that load waits, the node they
//   were moved off among the others (its reload priced); one sent there still waits at herd for that load, so Ollama
//   does not serve it from the runner it is evicting and starve the load; a request that fails on its node after
//   waiting there is ranked again, by the queues as they are by then;
// - streams: a stream is ranked by its first token and part of its decode (STREAM_DECODE_WEIGHT), so a node that
//   starts sooner but decodes slower gets a stream, and not a whole answer.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { EVICT_MS } from "../src/fleet/finish-time.ts";
import { EXPLORE_EVERY } from "../src/fleet/explore-turns.ts";
import { type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { blobPath, CATALOG } from "../src/sim/models.ts";
import { FACTS_OF_LOADED_MS } from "../src/runtime.ts";
import { eventually, getJson, onCleanup, startRouterProcess, tmpDir } from "./helpers.ts";

const FAST = "heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 }";
const MODEL = "llama3.2:1b";

/** A simulated node, and what the router's config adds to its entry there. */
type Node = SimNodeOptions & { config?: Record<string, unknown> };

/** The nodes and a router over them, once it sees them online with their models loaded; all stopped after the test. */
async function fleet(nodes: Node[], heartbeat = FAST) {
  const sims = await Promise.all(nodes.map(({ config: _, ...opts }) => startSimOllama(opts)));
  onCleanup({ run: () => Promise.all(sims.map((s) => s.stop())) });
  const dir = tmpDir();
  const entries = nodes.map((n, i) => JSON.stringify({ id: n.id, ollama: sims[i]!.url, ...n.config }));
  writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [${entries.join(", ")}], ${heartbeat} };\n`);
  const { url } = await startRouterProcess(["serve", "--config", join(dir, "herd.config.ts"), "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  const seen = (id: string, loaded: string[]) => eventually(async () => (await loadedOn(url, id)).join() === loaded.join(), 10_000, `${id} online with ${loaded.join(", ") || "nothing"} loaded`);
  await Promise.all(nodes.map((n) => seen(n.id, n.loaded ?? [])));
  return { url, sims, seen };
}

/** The models the router sees loaded on a node that is online. */
async function loadedOn(url: string, id: string): Promise<string[]> {
  const node = (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === id);
  if (node?.status !== "online") throw new Error(`${id} is ${node?.status ?? "unknown"}`);
  return (node.ollama?.models_loaded ?? []).map((m: any) => m.name);
}

/** One generation capped at 64 tokens (what herd expects of it), read to its end: the node that served it, and its predicted finish's parts. */
async function ask(url: string, model: string, stream = false) {
  const res = await fetch(`${url}/api/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "hi", stream, options: { num_predict: 64 } }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  const parts = (res.headers.get("x-fleet-prediction-breakdown") ?? "").split("; ").map((p) => p.split("="));
  return { node: res.headers.get("x-fleet-node"), breakdown: Object.fromEntries(parts.map(([k, v]) => [k, Number(v)])) as Record<string, number> };
}

describe("exploring a node whose speed for the model herd has not learned", () => {
  /**
   * `fast` and nodes of `slower` bandwidths (GB/s; fast's is 400), all with the model loaded. Each sim decodes at the
   * speed its declared bandwidth implies, so herd's prediction of a node before its answers (by bandwidth, against
   * fast's learned speed) is right, and the answer explored confirms it. Four slots: a request just finished never waits.
   */
  const explored = async (slower: Record<string, number>, n: number, undeclared: string[] = []) => {
    const node = (id: string, bandwidthGbps: number) => ({
      id,
      models: [MODEL],
      loaded: [MODEL],
      numParallel: 4,
      tokensPerSecond: bandwidthGbps / 4,
      config: { parallel: 4, ...(undeclared.includes(id) ? {} : { hardware: { bandwidthGbps } }) },
    });
    const { url } = await fleet([node("fast", 400), ...Object.entries(slower).map(([id, gbps]) => node(id, gbps))]);
    const served: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const { node } = await ask(url, MODEL);
      served[node!] = (served[node!] ?? 0) + 1;
    }
    return served;
  };

  test("one in EXPLORE_EVERY of the model's requests goes to a node nearly as good, which is then judged on what it showed", async () => {
    // Each near node costs 1.43× fast's: never the soonest, but within EXPLORE_RATIO. Three of them, so exploring
    // could take more than its share of 16 requests (two turns of EXPLORE_EVERY, 8) were it not bounded.
    const n = 16;
    const served = await explored({ near1: 280, near2: 280, near3: 280 }, n);
    const near = ["near1", "near2", "near3"].map((id) => served[id] ?? 0);
    const total = near.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(1);
    expect(total).toBeLessThanOrEqual(n / EXPLORE_EVERY);
    // Once learned, a near node is not the soonest: no second request.
    expect(Math.max(...near)).toBe(1);
    expect(served.fast).toBe(n - total);
  }, 20_000);

  test("a node of unknown bandwidth, taken to be no faster than a Pro-class Mac, is explored at the fleet's pace and then shares the load", async () => {
    // Taken at 200 GB/s against fast's 400: twice the cost, but it may be as fast as fast, and is.
    const served = await explored({ twin: 400 }, 16, ["twin"]);
    expect(served.twin ?? 0).toBeGreaterThanOrEqual(4);
  }, 20_000);

  test("a node not learned but far slower (4× the cost) is not explored", async () => {
    // One turn of EXPLORE_EVERY (8): the last request may explore, and finds nothing worth it.
    expect(await explored({ far: 100 }, 8)).toEqual({ fast: 8 });
  }, 20_000);
});

test("a load that must evict a model asked for lately pays its reload: it goes where the model it evicts was not asked for", async () => {
  const [used, unused, wanted] = ["llama3.2:3b", MODEL, "llama3.1:8b"];
  // Declared memory (herd leaves 6 GB to the OS) where the 5.2 GB wanted fits only by evicting: a's 2.2 GB `used`, or
  // b's 1.5 GB `unused`. Were the evictions priced alike, the tie would go to a, the bigger machine. The sims hold what
  // herd leaves; the bandwidths are alike, so b, not run yet, is taken to be as fast as a.
  const node = (id: string, memoryGb: number, loaded: string) => ({
    id,
    models: [loaded, wanted],
    loaded: [loaded],
    memoryGb: memoryGb - 6,
    contextLength: 4096,
    config: { parallel: 1, contextLength: 4096, hardware: { memoryGb, bandwidthGbps: 400 } },
  });
  const { url, sims, seen } = await fleet([node("a", 12.6, used), node("b", 11.8, unused)]);
  expect((await ask(url, used)).node).toBe("a");

  const load = await ask(url, wanted);
  expect(load.node).toBe("b");
  // The eviction is in b's estimate; no reload comes of it.
  expect(load.breakdown.evict_ms).toBe(EVICT_MS);
  expect(load.breakdown.reload_evicted_ms).toBeUndefined();
  expect([sims[0]!.state().loaded, sims[1]!.state().loaded]).toEqual([[used], [wanted]]);

  // b's next load must evict `wanted`, asked for just now: its reload is priced.
  await seen("b", [wanted]);
  const again = await ask(url, unused);
  expect(again.node).toBe("b");
  expect(again.breakdown.evict_ms).toBe(EVICT_MS);
  expect(again.breakdown.reload_evicted_ms).toBeGreaterThan(0);
}, 20_000);

test("a fourth model evicts the one Ollama picks, the first by its weights' blob path, though used last: herd expects that one gone", async () => {
  const idle = ["llama3.2:1b", "llama3.2:3b", "qwen3:8b"];
  const path = (name: string) => blobPath(CATALOG.find((m) => m.name === name)!);
  const [first, ...rest] = [...idle].sort((a, b) => (path(a) < path(b) ? -1 : 1));
  const wanted = "llama3.1:8b";
  // Heartbeats far apart: what herd shows of the node after the load is its own expectation, not the node's next report.
  const { url, sims } = await fleet([{ id: "n", models: [...idle, wanted], loaded: idle, memoryGb: 186, config: { hardware: { memoryGb: 192 } } }], "heartbeat: { intervalMs: 60000, timeoutMs: 120000, offlineMs: 240000 }");
  // Used in an order that puts the first by blob last: the least recently used would be another.
  for (const m of [...rest, first!]) await ask(url, m);
  // herd asks /api/show of the models loaded there (each FACTS_OF_LOADED_MS), the blobs among it, and reads the answers.
  await eventually(async () => sims[0]!.state().counters.shows! >= idle.length, 10_000, "herd to ask /api/show of the loaded models");
  await Bun.sleep(FACTS_OF_LOADED_MS);
  const load = await ask(url, wanted);
  expect(load.breakdown.evict_ms).toBe(EVICT_MS);
  expect([...(sims[0]!.state().loaded ?? [])].sort()).toEqual([...rest, wanted].sort());
  expect((await loadedOn(url, "n")).sort()).toEqual([...rest].sort());
}, 20_000);

test("a node of unknown memory, once seen unloading a model for room, is priced with the evictions a load makes there", async () => {
  const [small, big, wanted] = ["llama3.2:3b", "llama3.1:8b", "qwen3:8b"];
  // Agentless, its memory declared nowhere: 12 GB holds two of the three, not all of them.
  const { url, sims } = await fleet([{ id: "n", models: [small, big, wanted], loaded: [small, big], memoryGb: 12, contextLength: 4096, config: { contextLength: 4096 } }]);
  // Two loaded of the three Ollama holds: herd knows only the count, and expects no eviction.
  const first = await ask(url, wanted);
  expect(first.breakdown.evict_ms).toBe(0);
  const kept = sims[0]!.state().loaded ?? [];
  expect(kept).toHaveLength(2); // the node did unload one, for room
  await eventually(async () => (await loadedOn(url, "n")).sort().join() === [...kept].sort().join(), 5000, "the unload in a report");
  // Now herd takes the most it held as its memory: loading the one it unloaded evicts another.
  const gone = [small, big].find((m) => !kept.includes(m))!;
  expect((await ask(url, gone)).breakdown.evict_ms).toBe(EVICT_MS);
}, 20_000);

const [busy, wanted] = ["llama3.2:1b", "llama3.1:8b"];

/**
 * a, the faster by what is declared (it decodes slower than that), has the only copy of `wanted`, which fits beside
 * `busy` in none of the 6 GB herd leaves a model of the 12 declared (the sim holds that 6); b has `busy` on disk.
 */
function busyFleet() {
  const node = (id: string, models: string[], loaded: string[], bandwidthGbps: number, tokensPerSecond: number): Node => ({
    id,
    models,
    loaded,
    memoryGb: 6,
    tokensPerSecond,
    contextLength: 4096,
    config: { hardware: { memoryGb: 12, bandwidthGbps }, contextLength: 4096 },
  });
  return fleet([node("a", [busy, wanted], [busy], 800, 20), node("b", [busy], [], 100, 400)]);
}

test("a load that evicts a busy model moves the requests waiting at herd for it there to another node, not after it to load it back", async () => {
  const { url } = await busyFleet();
  const running = ask(url, busy); // 64 tokens at 20/s: a's one slot for `busy` is taken for ~3 s
  await Bun.sleep(200);
  const waiting = ask(url, busy); // waits at herd behind it, on a where the model is loaded
  await Bun.sleep(200);
  const load = await ask(url, wanted);
  expect(load.node).toBe("a");
  expect(load.breakdown.evict_ms).toBe(EVICT_MS);
  expect((await running).node).toBe("a");
  expect((await waiting).node).toBe("b");
}, 20_000);

test("a request moved off its node as a load there evicts its model may go back there: the reload there is sooner than a load elsewhere", async () => {
  // a as in busyFleet; b has `busy` on disk only, and is taken to decode it at 5 tokens/s (10 GB/s): 64 tokens take 13 s,
  // against a's wait for its load of `wanted` and then its reload of `busy`, a few seconds.
  const node = (id: string, models: string[], loaded: string[], bandwidthGbps: number): Node => ({
    id,
    models,
    loaded,
    memoryGb: 6,
    tokensPerSecond: 20,
    contextLength: 4096,
    config: { hardware: { memoryGb: 12, bandwidthGbps }, contextLength: 4096 },
  });
  const { url } = await fleet([node("a", [busy, wanted], [busy], 800), node("b", [busy], [], 10)]);
  const running = ask(url, busy); // 64 tokens at 20/s: a's one slot for `busy` is taken for ~3 s
  await Bun.sleep(200);
  const waiting = ask(url, busy); // waits at herd behind it on a
  await Bun.sleep(200);
  const load = await ask(url, wanted); // evicts `busy` on a once `running` ends: `waiting` is moved off a, and ranked again
  expect(load.node).toBe("a");
  expect((await running).node).toBe("a");
  const back = await waiting;
  expect(back.node).toBe("a");
  expect(back.breakdown.load_ms).toBeGreaterThan(0);
}, 30_000);

test("a model a load there evicts once its running request ends is not sent there meanwhile: Ollama would serve it at once and starve the load", async () => {
  const { url } = await busyFleet();
  const running = ask(url, busy); // 64 tokens at 20/s: a's one slot for `busy` is taken for ~3 s
  await Bun.sleep(200);
  const load = ask(url, wanted); // a: waits there for `running` to end, then evicts `busy`
  await Bun.sleep(1000);
  const after = await ask(url, busy);
  expect(after.node).toBe("b");
  expect((await load).node).toBe("a");
  expect((await running).node).toBe("a");
}, 20_000);

test("a model a load there evicts, on the only node that has it, waits at herd for that load: Ollama would serve it at once and starve the load", async () => {
  const { url } = await fleet([
    { id: "a", models: [busy, wanted], loaded: [busy], memoryGb: 6, tokensPerSecond: 20, contextLength: 4096, numParallel: 2, config: { hardware: { memoryGb: 12 }, contextLength: 4096, parallel: 2 } },
  ]);
  const finished: string[] = [];
  const timed = (name: string, model: string) => ask(url, model).then((answer) => (finished.push(name), answer));
  const running = timed("running", busy); // 64 tokens at 20/s: ~3 s; a has a second slot for `busy`
  await Bun.sleep(200);
  const load = timed("load", wanted); // evicts `busy` once `running` ends
  await Bun.sleep(500);
  const after = timed("after", busy); // only a has `busy`, and a load there evicts it: it waits for that load
  expect((await load).node).toBe("a");
  expect((await running).node).toBe("a");
  expect((await after).node).toBe("a");
  expect(finished).toEqual(["running", "load", "after"]);
}, 30_000);

test("a load sent to a node behind another waits for it there (Ollama loads one at a time): it goes to a node like it that loads nothing", async () => {
  const [first, second] = ["llama3.2:1b", "llama3.2:3b"];
  const node = (id: string): Node => ({ id, models: [first, second], loadTimeMs: 2000, memoryGb: 64, config: { hardware: { memoryGb: 64 } } });
  const { url } = await fleet([node("a"), node("b")]);
  const loading = ask(url, first); // a, the first by name of two alike: its load takes 2 s
  await Bun.sleep(200);
  const behind = await ask(url, second);
  expect(behind.node).toBe("b");
  expect(behind.breakdown.loads_ahead_ms).toBeUndefined();
  expect((await loading).node).toBe("a");
}, 20_000);

test("a stream goes to the node whose first token comes sooner; a whole answer to the one that finishes sooner", async () => {
  // early loads in 0.2 s and decodes 25 tokens/s; late loads in 2 s and decodes 400/s. Neither has the model loaded.
  // Whole (a 64-token cap): late ~2.2 s, early ~2.8 s. A stream counts half the decode: late ~2.1 s, early ~1.5 s.
  const { url, sims, seen } = await fleet([
    { id: "early", models: [MODEL], tokensPerSecond: 25, loadTimeMs: 200, config: { parallel: 1 } },
    { id: "late", models: [MODEL], tokensPerSecond: 400, loadTimeMs: 2000, config: { parallel: 1 } },
  ]);
  const unload = async () => {
    for (const s of sims) s.patch({ loaded: [] });
    await Promise.all(["early", "late"].map((id) => seen(id, [])));
  };
  // A cold answer on each teaches herd its load and decode: the second goes to the node not tried, predicted alike.
  const learned: (string | null)[] = [];
  for (let i = 0; i < 2; i++) {
    learned.push((await ask(url, MODEL)).node);
    await unload();
  }
  expect(learned.sort()).toEqual(["early", "late"]);

  expect((await ask(url, MODEL, true)).node).toBe("early");
  await unload();
  expect((await ask(url, MODEL)).node).toBe("late");
}, 20_000);

test("a request whose node fails once it had waited there is ranked again: it goes to the node soonest by then, not the one next when it came", async () => {
  // Speeds as herd predicts them from the bandwidths (64, 25.6, 20 tokens/s): 64 tokens take a 1 s, b 2.5 s, c 3.2 s; one slot each.
  const node = (id: string, bandwidthGbps: number): Node => ({ id, models: [MODEL], loaded: [MODEL], tokensPerSecond: bandwidthGbps / 2, config: { parallel: 1, hardware: { bandwidthGbps } } });
  const { url, sims } = await fleet([node("a", 128), node("b", 51.2), node("c", 40)]);
  expect((await ask(url, MODEL)).node).toBe("a"); // herd learns the reply's length: the queue ahead is priced by it
  const running = ask(url, MODEL); // a, idle and fastest
  await Bun.sleep(50);
  const failing = ask(url, MODEL); // waits at herd behind it on a (~2 s), sooner than b (2.5 s) or c (3.2 s)
  await Bun.sleep(50);
  const second = ask(url, MODEL); // b: a's queue (~3 s) is longer now
  await Bun.sleep(300);
  sims[0]!.setFaults({ error500: true }); // a fails the waiting request when its turn comes; the running one is answered
  expect((await running).node).toBe("a");
  expect((await second).node).toBe("b");
  expect((await failing).node).toBe("c"); // by then b is busy with `second` for ~2 s more: c finishes sooner
}, 20_000);
