// Faults through a real router to simulated nodes: a node killed mid-stream, one
// that accepts and never answers, a slow one, one that flaps, one that sends
// garbage, one that cuts its stream mid-line. Each time the client (the
// official ollama and openai SDKs) gets an answer or an error in its own wire
// format within the configured timeouts, the trace says what happened, and
// /fleet/status and the health page show it.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { type Faults, type SimNode, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const MODEL = "llama3.2:3b";
// Polls every 200 ms: a node that stops answering them is degraded after 600 ms, offline after 1.2 s.
const FAST = { intervalMs: 200, timeoutMs: 600, offlineMs: 1200 };

// Each test starts a router and waits out real timeouts and status changes.
setDefaultTimeout(15_000);

const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

interface NodeSpec {
  id: string;
  /** Has the model loaded (so it is preferred), or only on disk. */
  hot: boolean;
  tokensPerSecond?: number;
  faults?: Faults;
  port?: number;
}

async function sim(n: NodeSpec): Promise<SimNode> {
  const node = await startSimOllama({ id: n.id, port: n.port, models: [MODEL], loaded: n.hot ? [MODEL] : [], loadTimeMs: 10, tokensPerSecond: n.tokensPerSecond ?? 400, faults: n.faults });
  sims.push(node);
  return node;
}

async function fleet(specs: NodeSpec[], timeouts: Record<string, number> = {}) {
  const nodes = await Promise.all(specs.map(sim));
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  const config = {
    // Alike Macs, declared alike: a node herd has not timed yet is then taken to be as fast as the one it has.
    nodes: nodes.map((n) => ({ id: n.id, ollama: n.url, hardware: { bandwidthGbps: 400 } })),
    heartbeat: FAST,
    timeouts: { connectMs: 300, ...timeouts },
    // A model nobody has fails at once rather than being pulled; no fallback to another model.
    features: { autoPull: false, vramFallback: false },
  };
  writeFileSync(file, JSON.stringify(config));
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  await eventually(async () => (await status(router.url)).nodes.every((n: any) => n.status === "online"), 3000, "all nodes online");
  const byId = Object.fromEntries(nodes.map((n) => [n.id, n]));
  return { url: router.url, router, nodes: byId };
}

const status = (url: string) => getJson(`${url}/fleet/status`);
const nodeStatus = async (url: string, id: string) => (await status(url)).nodes.find((n: any) => n.node_id === id);
const check = async (url: string, id: string) => (await getJson(`${url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === id);

/** The trace of the one request tagged `tag` (clients send X-Herd-Tags). */
async function traceOf(url: string, tag: string): Promise<any> {
  return eventually(async () => (await getJson(`${url}/dashboard/api/traces?limit=200`)).traces.find((t: any) => t.tags.includes(tag)), 3000, `the trace tagged ${tag}`);
}

const ollama = (url: string, tag: string) => new Ollama({ host: url, headers: { "x-herd-tags": tag } });
const openai = (url: string, tag: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-herd-tags": tag } });
const ask = [{ role: "user" as const, content: "tell me a long story about a lighthouse" }];

/** Runs `work` and returns how it ended (the value or the error) and how long it took. */
async function timed<T>(work: () => Promise<T>): Promise<{ value?: T; error?: any; ms: number }> {
  const t0 = performance.now();
  try {
    const value = await work();
    return { value, ms: performance.now() - t0 };
  } catch (error) {
    return { error, ms: performance.now() - t0 };
  }
}

/** Streams an Ollama chat to its end; `onChunk` sees the count of chunks so far. */
async function ollamaStream(client: Ollama, onChunk: (n: number) => unknown = () => {}): Promise<string> {
  let text = "";
  let n = 0;
  for await (const part of await client.chat({ model: MODEL, messages: ask, stream: true })) {
    text += part.message.content;
    await onChunk(++n);
  }
  return text;
}

async function openaiStream(client: OpenAI, onChunk: (n: number) => unknown = () => {}): Promise<string> {
  let text = "";
  let n = 0;
  for await (const chunk of await client.chat.completions.create({ model: MODEL, messages: ask, stream: true })) {
    text += chunk.choices[0]?.delta.content ?? "";
    await onChunk(++n);
  }
  return text;
}

describe("faults", () => {
  test("a node killed mid-stream: the stream ends with an error at once, the trace says so, the node goes offline and comes back", async () => {
    const { url, nodes } = await fleet([{ id: "doomed", hot: true, tokensPerSecond: 20 }, { id: "spare", hot: false }]);
    const port = nodes.doomed!.port;
    let killedAt = 0;
    const kill = async (n: number) => {
      if (n !== 3) return;
      killedAt = performance.now();
      await nodes.doomed!.stop();
    };
    const cut = await timed(() => ollamaStream(ollama(url, "killed-ollama"), kill));
    expect(cut.error?.message).toMatch(/node doomed (closed the stream before it finished|failed mid-stream)/);
    expect(performance.now() - killedAt).toBeLessThan(1000);
    const trace = await traceOf(url, "killed-ollama");
    expect(trace).toMatchObject({ node_id: "doomed", status: expect.stringMatching(/^(incomplete|failed)$/) });
    expect(trace.error_message).toBe(cut.error.message);

    // The next request is routed around the dead node before it is even seen offline.
    const next = await timed(() => ollama(url, "after-kill").chat({ model: MODEL, messages: ask, stream: false }));
    expect(next.value?.done).toBe(true);
    expect(next.ms).toBeLessThan(2000);
    expect(await traceOf(url, "after-kill")).toMatchObject({ node_id: "spare", status: "completed" });

    const offline = await eventually(async () => {
      const n = await nodeStatus(url, "doomed");
      return n.status === "offline" && n;
    }, 3000, "doomed offline");
    expect(offline.status_reason).toMatch(/connection refused/);
    const down = await check(url, "nodes_offline");
    expect(down).toMatchObject({ severity: "critical", nodes: ["doomed"] });

    // Back on its port: online again, and killed again under the OpenAI client.
    nodes.doomed = await sim({ id: "doomed", hot: true, tokensPerSecond: 20, port });
    await eventually(async () => (await nodeStatus(url, "doomed")).status === "online", 3000, "doomed back online");
    expect((await check(url, "nodes_offline")).severity).toBe("ok");
    const cutAgain = await timed(() => openaiStream(openai(url, "killed-openai"), kill));
    expect(cutAgain.error).toBeInstanceOf(OpenAI.APIError);
    expect(cutAgain.error.message).toMatch(/node doomed/);
    expect(performance.now() - killedAt).toBeLessThan(1000);
    expect((await traceOf(url, "killed-openai")).error_message).toMatch(/node doomed/);
  });

  test("a node that accepts and never answers: the request fails after timeouts.firstByteMs, the node goes offline and the next node serves; when all hang, a 503 in the client's format", async () => {
    const FIRST_BYTE_MS = 500;
    const { url, nodes } = await fleet([{ id: "mute", hot: true }, { id: "backup", hot: false }], { firstByteMs: FIRST_BYTE_MS });
    nodes.mute!.setFaults({ hang: true });
    // The node spent the request's whole first-byte budget: no time is left for another.
    const cut = await timed(() => openai(url, "hang-one").chat.completions.create({ model: MODEL, messages: ask, max_tokens: 4 }));
    expect(cut.error?.status).toBe(503);
    expect(cut.ms).toBeGreaterThanOrEqual(FIRST_BYTE_MS - 20);
    expect(cut.ms).toBeLessThan(FIRST_BYTE_MS + 1500);
    expect(await traceOf(url, "hang-one")).toMatchObject({ status: "failed", excluded_nodes: ["mute"] });

    // Its polls hang too: it goes offline, saying why, and gets no more requests.
    const mute = await eventually(async () => {
      const n = await nodeStatus(url, "mute");
      return n.status === "offline" && n;
    }, 3000, "mute offline");
    expect(mute.status_reason).toMatch(/no answer for \d+ s; Ollama at .*: no answer within 300 ms/);
    const served = await timed(() => openai(url, "hang-one-after").chat.completions.create({ model: MODEL, messages: ask, max_tokens: 4 }));
    expect(served.value?.choices[0]?.message.content).toBeTruthy();
    expect(served.ms).toBeLessThan(FIRST_BYTE_MS);
    expect(await traceOf(url, "hang-one-after")).toMatchObject({ node_id: "backup", status: "completed", retry_count: 0 });

    nodes.backup!.setFaults({ hang: true });
    const failed = await timed(() => ollama(url, "hang-all").chat({ model: MODEL, messages: ask, stream: false }));
    expect(failed.error?.status_code).toBe(503);
    expect(failed.error.message).toMatch(/no node can serve it right now: llama3.2:3b on mute \(offline\), llama3.2:3b on backup \(online\); tried backup: no answer within 500 ms/);
    expect(failed.ms).toBeGreaterThanOrEqual(FIRST_BYTE_MS - 20);
    expect(failed.ms).toBeLessThan(FIRST_BYTE_MS + 1500);
    expect(await traceOf(url, "hang-all")).toMatchObject({ status: "failed", node_id: null, excluded_nodes: ["backup"], error_message: failed.error.message });

    await eventually(async () => (await nodeStatus(url, "backup")).status === "offline", 3000, "backup offline");
    expect(await check(url, "nodes_offline")).toMatchObject({ severity: "critical" });
    const timeouts = await check(url, "request_timeouts");
    expect(timeouts.severity).toBe("warning");
    expect(timeouts.finding).toContain(MODEL);
    // Once nothing can serve, a client is told at once, not after another wait.
    const refused = await timed(() => openai(url, "hang-offline").chat.completions.create({ model: MODEL, messages: ask }));
    expect(refused.error).toBeInstanceOf(OpenAI.APIError);
    expect(refused.error.status).toBe(503);
    expect(refused.ms).toBeLessThan(500);
  });

  test("timeouts.firstByteMs is one budget per request: two nodes that never answer cost it once, not once each", async () => {
    const FIRST_BYTE_MS = 1500;
    // Polls slower than the wait, so both nodes are still online candidates when the request comes.
    const { url, nodes } = await fleet([{ id: "mute-a", hot: true }, { id: "mute-b", hot: true }], { firstByteMs: FIRST_BYTE_MS });
    nodes["mute-a"]!.setFaults({ hang: true });
    nodes["mute-b"]!.setFaults({ hang: true });
    const failed = await timed(() => openai(url, "hang-budget").chat.completions.create({ model: MODEL, messages: ask, max_tokens: 4 }));
    expect(failed.error).toBeInstanceOf(OpenAI.APIError);
    expect(failed.error.status).toBe(503);
    expect(failed.ms).toBeGreaterThanOrEqual(FIRST_BYTE_MS - 20);
    expect(failed.ms).toBeLessThan(FIRST_BYTE_MS + 700);
    expect(failed.error.message).toMatch(/tried mute-[ab]: no answer within 1\d{3} ms/);
  });

  test("a slow node: a stream silent past timeouts.idleMs ends with an error in the client's format", async () => {
    const IDLE_MS = 300;
    const { url, nodes } = await fleet([{ id: "slow", hot: true }], { idleMs: IDLE_MS });
    nodes.slow!.setFaults({ tokenDelayMs: 800 });
    let firstAt = 0;
    const first = () => void (firstAt ||= performance.now());
    const viaOllama = await timed(() => ollamaStream(ollama(url, "slow-ollama"), first));
    expect(viaOllama.error?.message).toBe(`node slow failed mid-stream: no whole line from the node for ${IDLE_MS} ms`);
    expect(performance.now() - firstAt).toBeGreaterThanOrEqual(IDLE_MS - 20);
    expect(performance.now() - firstAt).toBeLessThan(IDLE_MS + 700);
    firstAt = 0;
    const viaOpenai = await timed(() => openaiStream(openai(url, "slow-openai"), first));
    expect(viaOpenai.error).toBeInstanceOf(OpenAI.APIError);
    expect(viaOpenai.error.message).toContain(`no whole line from the node for ${IDLE_MS} ms`);
    expect(performance.now() - firstAt).toBeLessThan(IDLE_MS + 700);

    for (const tag of ["slow-ollama", "slow-openai"]) {
      expect(await traceOf(url, tag)).toMatchObject({ node_id: "slow", status: "failed", error_message: viaOllama.error.message });
    }
    // The node itself still answers its polls: online, with the failures on its queue; the health page counts the timeouts.
    const s = await status(url);
    expect(s.nodes[0].status).toBe("online");
    expect(s.queues[`slow:${MODEL}`]).toMatchObject({ in_flight: 0, failed: 2 });
    expect((await check(url, "request_timeouts")).finding).toContain(`2 request(s) timed out`);
  });

  test("a flapping node: requests keep being answered by the fleet; its status follows it up and down", async () => {
    const { url, nodes } = await fleet([{ id: "flappy", hot: true }, { id: "steady", hot: false }]);
    nodes.flappy!.setFaults({ flapMs: 1500 });
    const seen = { flappy: new Set<string>(), steady: new Set<string>() };
    let sawOffline = false;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const s = await status(url);
        for (const n of s.nodes) seen[n.node_id as keyof typeof seen].add(n.status);
        if (!sawOffline && s.nodes.find((n: any) => n.node_id === "flappy").status === "offline") {
          sawOffline = true;
          expect((await check(url, "nodes_offline")).nodes).toEqual(["flappy"]);
        }
        await Bun.sleep(100);
      }
    })();
    const servedBy: Record<string, number> = {};
    const errors: string[] = [];
    const client = ollama(url, "flapping");
    const until = performance.now() + 6000;
    while (performance.now() < until) {
      const r = await timed(async () => {
        const res = await fetch(`${url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "hi", stream: false, options: { num_predict: 4 } }) });
        return { node: res.headers.get("x-fleet-node")!, status: res.status, body: (await res.json()) as any };
      });
      expect(r.ms).toBeLessThan(2000);
      if (r.value?.status === 200) servedBy[r.value.node] = (servedBy[r.value.node] ?? 0) + 1;
      else errors.push(r.value ? `${r.value.status} ${r.value.body.error}` : r.error.message);
      // Streams as well: one cut by the node going down ends with an error line, never a hang.
      const stream = await timed(() => client.generate({ model: MODEL, prompt: "hi", stream: true, options: { num_predict: 8 } }).then(async (it) => {
        for await (const _ of it);
      }));
      if (stream.error) expect(stream.error.message).toMatch(/node flappy/);
      expect(stream.ms).toBeLessThan(2000);
    }
    watching = false;
    await watch;
    expect(errors).toEqual([]);
    expect(servedBy.flappy).toBeGreaterThan(0);
    expect(servedBy.steady).toBeGreaterThan(0);
    expect([...seen.flappy]).toContain("online");
    expect(sawOffline).toBe(true);
    expect([...seen.steady]).toEqual(["online"]);
  });

  test("garbage instead of JSON: before the first byte another node serves; after it the stream ends with an error", async () => {
    const { url, nodes } = await fleet([{ id: "garbled", hot: true }, { id: "clean", hot: false }]);
    nodes.garbled!.setFaults({ garbageAfterTokens: 0 });
    const served = await timed(() => ollama(url, "garbage-first").chat({ model: MODEL, messages: ask, stream: false }));
    expect(served.value?.done).toBe(true);
    expect(await traceOf(url, "garbage-first")).toMatchObject({ node_id: "clean", status: "completed", retry_count: 1, excluded_nodes: ["garbled"] });

    // "clean" has the model loaded now: both nodes go bad, so whichever serves, it fails mid-stream.
    for (const node of Object.values(nodes)) node.setFaults({ garbageAfterTokens: 3 });
    const viaOllama = await timed(() => ollamaStream(ollama(url, "garbage-ollama")));
    expect(viaOllama.error?.message).toMatch(/^node (garbled|clean) failed mid-stream: the node sent a line that is not JSON: <html>/);
    const viaOpenai = await timed(() => openaiStream(openai(url, "garbage-openai")));
    expect(viaOpenai.error).toBeInstanceOf(OpenAI.APIError);
    expect(viaOpenai.error.message).toContain("not JSON");
    for (const tag of ["garbage-ollama", "garbage-openai"]) {
      const trace = await traceOf(url, tag);
      expect(trace.status).toBe("failed");
      expect(trace.error_message).toContain("the node sent a line that is not JSON");
    }
    expect(viaOllama.ms + viaOpenai.ms).toBeLessThan(3000);
    for (const tag of ["garbage-3", "garbage-4"]) await timed(() => ollamaStream(ollama(url, tag)));
    // Four of the five requests failed: the nodes still answer their polls (online), the health page flags the model.
    const s = await status(url);
    expect(s.nodes.map((n: any) => n.status)).toEqual(["online", "online"]);
    expect(s.queues[`garbled:${MODEL}`].failed + s.queues[`clean:${MODEL}`].failed).toBe(5); // the first request's try included
    await traceOf(url, "garbage-4");
    const errors = await check(url, "error_rate");
    expect(errors).toMatchObject({ severity: "critical", finding: `${MODEL}: 4 of 5 requests failed in the last hour (80%)` });
  });

  test("a stream cut mid-line ends with an error that says so; a cut whole answer is retried elsewhere", async () => {
    const { url, nodes } = await fleet([{ id: "cut", hot: true }, { id: "whole", hot: false }]);
    nodes.cut!.setFaults({ truncateAfterTokens: 3 });
    const viaOllama = await timed(() => ollamaStream(ollama(url, "cut-ollama")));
    expect(viaOllama.error?.message).toMatch(/^node cut failed mid-stream: the node closed the stream mid-line/);
    const viaOpenai = await timed(() => openaiStream(openai(url, "cut-openai")));
    expect(viaOpenai.error).toBeInstanceOf(OpenAI.APIError);
    expect(viaOpenai.error.message).toContain("closed the stream mid-line");
    expect(viaOllama.ms + viaOpenai.ms).toBeLessThan(3000);
    for (const tag of ["cut-ollama", "cut-openai"]) {
      // How many bytes of the cut line arrived varies by one with the timestamp the node wrote (Go trims trailing zeros).
      expect(await traceOf(url, tag)).toMatchObject({ node_id: "cut", status: "failed", error_message: expect.stringMatching(/^node cut failed mid-stream: the node closed the stream mid-line \(\d+ bytes after the last whole line\)$/) });
    }

    const whole = await timed(() => openai(url, "cut-whole").chat.completions.create({ model: MODEL, messages: ask, max_tokens: 4 }));
    expect(whole.value?.choices[0]?.message.content).toBeTruthy();
    expect(await traceOf(url, "cut-whole")).toMatchObject({ node_id: "whole", retry_count: 1, excluded_nodes: ["cut"] });
  });
});

describe("the sim's faults", () => {
  test("are set through POST /_sim, checked, and cleared", async () => {
    const node = await sim({ id: "s", hot: true });
    const control = (faults: unknown) => fetch(`${node.url}/_sim`, { method: "POST", body: JSON.stringify({ faults }) });
    const refused = await control({ flapMs: 50 });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: "faults.flapMs must be at least 100" });
    expect((await control({ garbageAfterTokens: -1 })).status).toBe(400);
    expect(((await (await control({ garbageAfterTokens: 0, truncateAfterTokens: 2 })).json()) as any).faults).toEqual({ garbageAfterTokens: 0, truncateAfterTokens: 2 });
    const garbled = await fetch(`${node.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "hi", stream: false }) });
    expect(await garbled.text()).toStartWith("<html>");
    expect(node.state().counters.garbled).toBe(1);
    await control({});
    expect(((await (await fetch(`${node.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "hi", stream: false }) })).json()) as any).done).toBe(true);
  });
});

describe("the store", () => {
  test("a full disk: routing keeps serving, nodes and config still change, the store_writable check fires and clears", async () => {
    const [node, other] = await Promise.all([sim({ id: "n1", hot: true }), sim({ id: "n2", hot: true })]);
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    const config = (extra: object = {}) => JSON.stringify({ nodes: [{ id: "n1", ollama: node.url }, { id: "n2", ollama: other.url }], heartbeat: FAST, features: { autoPull: false }, ...extra });
    writeFileSync(file, config());
    // SIGXFSZ ignored: a write past the file-size limit then fails as on a full disk, instead of killing the process.
    const args = ["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")];
    const router = await startRouterProcess(["-c", `trap "" XFSZ; exec "$0" "$@"`, process.execPath, join(import.meta.dir, "../src/cli.ts"), ...args], { bin: "/bin/sh" });
    const { url } = router;
    await eventually(async () => (await status(url)).fleet.nodes_online === 2, 3000, "both nodes online");
    const client = ollama(url, "full-disk");
    expect((await client.generate({ model: MODEL, prompt: "hi", stream: false })).done).toBe(true);
    const writing = await eventually(async () => {
      const c = await check(url, "store_writable");
      return c.finding.includes("(1 since start,") && c;
    }, 3000, "the first trace written");
    expect(writing.severity).toBe("ok");

    // The disk is full: no file of the router's may grow by a byte.
    const limit = (value: string) => expect(Bun.spawnSync(["prlimit", `--pid=${router.proc.pid}`, `--fsize=${value}`]).exitCode).toBe(0);
    limit("0:unlimited");
    for (let i = 0; i < 3; i++) expect((await client.chat({ model: MODEL, messages: ask, stream: false })).done).toBe(true);
    const full = await eventually(async () => {
      const c = await check(url, "store_writable");
      return c.severity === "critical" && c;
    }, 3000, "the check to fire");
    expect(full.finding).toMatch(/^the store refuses writes \(disk I\/O error\): [1-3] trace\(s\) lost since start; routing goes on$/);
    expect(full.recommendation).toContain(join(dir, "data"));
    expect((await getJson(`${url}/dashboard/api/health?refresh=1`)).summary.status).toBe("critical");
    await router.waitFor(/cannot write traces \(.+\); routing goes on, traces are lost until the store takes them again/);

    // A node going away and a config edit are recorded in the store too: neither may stop the router.
    await other.stop();
    await eventually(async () => (await nodeStatus(url, "n2")).status === "offline", 3000, "n2 offline");
    writeFileSync(file, config({ routing: { maxRetries: 1 } }));
    const hash = new Bun.CryptoHasher("sha256").update(config({ routing: { maxRetries: 1 } })).digest("hex").slice(0, 12);
    await eventually(async () => (await status(url)).config.hash === hash, 3000, "the edit to apply");
    const answer = await timed(() => openai(url, "full-disk").chat.completions.create({ model: MODEL, messages: ask, max_tokens: 4 }));
    expect(answer.value?.choices[0]?.message.content).toBeTruthy();
    expect((await getJson(`${url}/healthz`)).status).toBe("ok");
    expect(router.proc.exitCode).toBeNull();

    // Space again: writes resume, and the check says what was lost.
    limit("unlimited");
    expect((await client.generate({ model: MODEL, prompt: "hi", stream: false })).done).toBe(true);
    const recovered = await eventually(async () => {
      const c = await check(url, "store_writable");
      return c.severity === "warning" && c;
    }, 3000, "writes to work again");
    // A full disk still lets SQLite reuse the room its files have, so some writes may have gone through meanwhile.
    expect(recovered.finding).toMatch(/^\d+ trace\(s\) were lost \d+ (ms|s) ago \(disk I\/O error\); writes work again$/);
    await router.waitFor(/writing traces again; \d+ were lost while the store refused them/);
    expect(router.output()).toMatch(/not recorded in the store \(disk I\/O error\): INSERT INTO node_events/);
  });
});
