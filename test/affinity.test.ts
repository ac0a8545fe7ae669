// Session affinity through a real router over two simulated Ollama nodes: an agent's later turns go to the node
// whose KV cache still holds the conversation, and a new session is free to go elsewhere.
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const MODEL = "llama3.2:3b";
const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

async function pair(affinity: boolean) {
  const nodes = await Promise.all(["a", "b"].map((id) => startSimOllama({ id, models: [MODEL], loaded: [MODEL], tokensPerSecond: 200, numParallel: 2 })));
  sims.push(...nodes);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  // Alike Macs, declared alike: a node herd has not timed yet is then taken to be as fast as the one it has.
  const entries = nodes.map((n) => JSON.stringify({ id: n.id, ollama: n.url, parallel: 2, hardware: { bandwidthGbps: 400 } }));
  writeFileSync(file, `export default { nodes: [${entries.join(", ")}], routing: { sessionAffinity: ${affinity} } };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "all nodes online");
  return { url: router.url, nodes };
}

const words = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");

/** An agent's session: each turn resends the conversation with the last answer and a tool's output appended. */
async function session(url: string, name: string, turns: number) {
  const messages: { role: string; content: string }[] = [
    { role: "system", content: words("sys", 400) },
    { role: "user", content: `${name}: ${words("task", 40)}` },
  ];
  const served: { node: string; breakdown: string }[] = [];
  for (let t = 0; t < turns; t++) {
    const res = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-herd-session": name },
      body: JSON.stringify({ model: MODEL, messages, stream: false, options: { num_predict: 5 } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { message: { role: string; content: string } };
    served.push({ node: res.headers.get("x-fleet-node")!, breakdown: res.headers.get("x-fleet-prediction-breakdown") ?? "" });
    messages.push(body.message, { role: "user", content: words(`tool${t}_`, 60) });
  }
  return served;
}

const cached = (nodes: SimNode[]) => Object.fromEntries(nodes.map((n) => [n.id, n.state().counters.cachedPromptTokens ?? 0]));

test("a multi-turn session sticks to the node holding its prefix; a new session is free to go elsewhere", async () => {
  const { url, nodes } = await pair(true);
  const turns = await session(url, "one", 5);
  const home = turns[0]!.node;
  expect(turns.map((s) => s.node)).toEqual(Array(5).fill(home));
  // Each later turn (the conversation so far) was prefilled from the cache, and the prediction's breakdown says so.
  expect(cached(nodes)[home]!).toBeGreaterThan(4 * 400);
  expect(turns.slice(1).every((s) => /cached_tokens=\d+/.test(s.breakdown))).toBe(true);
  type Row = { prediction_breakdown: Record<string, number> | null };
  const inTrace = async () => ((await getJson(`${url}/dashboard/api/traces?limit=10`)).traces as Row[]).some((t) => (t.prediction_breakdown?.cached_tokens ?? 0) > 400);
  await eventually(inTrace, 5000, "a trace whose prediction_breakdown has cached_tokens");
  // The cache hits taught no prefill rate: only the first turn did, the sim's real one (ten times its decode rate).
  const status = await getJson(`${url}/fleet/status`);
  const learned = status.nodes.find((n: any) => n.node_id === home).speeds[MODEL];
  expect(learned.samples.prefill).toBe(1);
  expect(learned.prefill_tps).toBeLessThan(2000 * 1.5);
  // A new conversation has nothing cached anywhere: the tie goes to the node used least recently.
  const other = await session(url, "two", 1);
  expect(other[0]!.node).not.toBe(home);
});

test("routing.sessionAffinity false: the same turns are spread over equal nodes", async () => {
  const { url } = await pair(false);
  const served = await session(url, "one", 4);
  expect(new Set(served.map((s) => s.node)).size).toBe(2);
  expect(served.every((s) => !s.breakdown.includes("cached_tokens"))).toBe(true);
});
