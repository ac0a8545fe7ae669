// Bad input at scale: 10,000 requests, from a fixed seed, to every route the app declares (test/fuzz-cases.ts
// draws them and judges each answer), and malformed HTTP on a raw socket. The router behind them has a
// healthy simulated node, so no answer may be a 5xx; each error must be in its route's format; no change
// may come through from another site's page, no key get more than it is allowed, no open heartbeat take a
// node; the router must still answer afterwards, and give back the memory the burst grew. Then rounds of chats with
// many new tags each: the store's file and the router's memory must stay flat across them. Then heartbeats alone
// (test/fuzz-heartbeats.ts), to a router in open mode and one that takes a node credential: none may take n1's
// models or change what herd shows of it, nor forge a log line, and memory, the store and descriptors stay flat.
// Then the other way round: a node whose every answer is fuzzed, to a second router (see "fuzzed node answers").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { SHRINK_TICK_MS } from "../src/core/idle-shrink.ts";
import { MAX_DECODE_TPS, MAX_PREFILL_TPS } from "../src/fleet/speeds.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { STORE_FILE } from "../src/store/db.ts";
import {
  ADMIN_TOKEN, FUZZ_MODELS, FUZZ_SEED, IDLE_SHRINK_MS, LIMITED_READS, KEYS, NODE_FUZZ_CAPS, NODE_FUZZ_MODEL, NODE_FUZZ_SEED, type Outcome, RATE_LIMIT,
  STORE_MAX_MB, appRoutes, sameModel, fuzzConfig, fuzzSequence, nodeAnswer, nodeFuzzProblem, nodeFuzzRequest, problem, sendAll, taggedSequence, wellFormed,
} from "./fuzz-cases.ts";
import { FLEET_MODELS, HEARTBEAT_SEED, NODE_TOKEN, heartbeatProblem, heartbeatSequence } from "./fuzz-heartbeats.ts";
import { cleanupFile, eventually, getJson, standInOllama, startRouterProcess, tmpDir } from "./helpers.ts";

const CASES = 10_000;
/** Equal rounds: a leak grows memory in the last as in the first. */
const ROUNDS = 2;
const CONCURRENCY = 12;
/** The tags' rounds: each of TAGGED chats of up to 32 mostly new tags, far past a day's maxTagsPerDay and the store's maxMb. */
const TAG_ROUNDS = 4;
const TAGGED = 1500;
const MB = 1024 * 1024;
/** The store's file may hold maxMb of data, plus what a batch or two adds before the next prune; its write-ahead log shrinks back to 4 MiB after each checkpoint. */
const STORE_FILE_BOUND = (STORE_MAX_MB + 2 + 4) * MB;

let sim: SimNode;
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let dataDir = "";

afterAll(cleanupFile);
afterAll(async () => {
  await sim?.stop();
});

beforeAll(async () => {
  // Fast enough that a request that does reach the node costs nothing; it never fails.
  sim = await startSimOllama({ id: "n1", models: FUZZ_MODELS, loaded: FUZZ_MODELS, tokensPerSecond: 1_000_000, loadTimeMs: 0 });
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify(fuzzConfig(sim.url)));
  dataDir = join(dir, "data");
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir]);
  await eventually(async () => (await read("/fleet/status")).fleet.nodes_online === 1, 3000, "n1 online");
});

/** A read as the full key makes it. */
async function read(path: string): Promise<any> {
  const res = await fetch(`${router.url}${path}`, { headers: { authorization: `Bearer ${KEYS.full}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/** Lets a router settle (its idle shrink comes three idle ticks after a burst, what it gives back a tick or two later), then the smallest of a few readings. */
async function settledRss(pid = router.proc.pid): Promise<number> {
  await Bun.sleep(IDLE_SHRINK_MS + 3 * SHRINK_TICK_MS + 1000); // the idle spell the shrink waits for, and its effect
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(rssMb(pid));
    await Bun.sleep(200);
  }
  return Math.min(...readings);
}

/** The store's files on disk: the SQLite file and its write-ahead log. */
function storeBytes(): number {
  return [STORE_FILE, `${STORE_FILE}-wal`].map((f) => join(dataDir, f)).reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);
}

/** The inference routes: with count_tokens and /api/show, what a key's rate limit covers. */
const INFERENCE = new Set(["POST /api/chat", "POST /api/generate", "POST /api/embed", "POST /api/embeddings", "POST /v1/chat/completions", "POST /v1/embeddings", "POST /v1/responses", "POST /v1/messages"]);

/** The model a request's body names, or "". */
function modelOf(o: Outcome): string {
  const body = o.sent.init.body;
  try {
    return String(JSON.parse(body instanceof Uint8Array ? new TextDecoder().decode(body) : String(body)).model);
  } catch {
    return "";
  }
}

describe("fuzz", () => {
  const outcomes: Outcome[] = [];
  const rss: number[] = [];
  let seconds = 0;

  test("the fuzz reaches every route the app declares", async () => {
    const routes = await appRoutes();
    expect(routes.length).toBeGreaterThan(40);
    for (const path of INFERENCE) expect(routes.some((r) => `${r.method} ${r.path}` === path)).toBe(true);
  });

  test(`${CASES} requests from seed ${FUZZ_SEED.toString(16)}: no 5xx, every error in its route's format, the router still up`, async () => {
    const routes = await appRoutes();
    const next = fuzzSequence();
    const began = performance.now();
    rss.push(rssMb(router.proc.pid));
    await sendAll(wellFormed(routes, router.url), CONCURRENCY);
    rss.push(await settledRss());
    let sending = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const round = performance.now();
      outcomes.push(...(await sendAll(next(CASES / ROUNDS, routes, router.url), CONCURRENCY)));
      sending += performance.now() - round;
      rss.push(await settledRss());
    }
    seconds = (performance.now() - began) / 1000;
    console.log(`fuzz: ${outcomes.length} requests in ${(sending / 1000).toFixed(1)} s`);

    const problems = outcomes.map((o) => problem(o, router.url)).filter((p): p is string => p !== null);
    if (problems.length) console.log(router.output().split("\n").filter((l) => / error /.test(l)).slice(0, 40).join("\n"));
    expect(problems.slice(0, 20)).toEqual([]);
    // The fuzz got past the first checks: many requests were answered, and every route was hit.
    expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(500);
    expect(new Set(outcomes.map((o) => o.sent.route)).size).toBe(routes.length);
    expect((await getJson(`${router.url}/healthz`)).status).toBe("ok");
    expect(router.proc.exitCode).toBeNull();
  }, 300_000);

  test("its memory, settled after each round, is within 1.25× of before (once each route has answered): what a burst grew is given back", () => {
    const [cold, before, ...after] = rss;
    console.log(`fuzz: RSS ${cold!.toFixed(0)} MB at idle, ${before!.toFixed(0)} once each route has answered, ${after.map((m) => m.toFixed(0)).join(", ")} settled after each round`);
    for (const settled of after) expect(settled).toBeLessThan(1.25 * before!);
  });

  test("no line of the router's log was forged: a CR/LF a client sent never starts a line of its own", () => {
    expect(router.output().split("\n").filter((line) => line.includes("INFO forged"))).toEqual([]);
  });

  test("no client key pulled a model: the node has only its own and what the admin pulled", async () => {
    const pulledByAdmin = outcomes.filter((o) => o.sent.route === "POST /api/pull" && o.status === 200 && o.sent.init.headers.authorization === `Bearer ${ADMIN_TOKEN}`);
    const extra = ((await (await fetch(`${sim.url}/api/tags`)).json()) as { models: { name: string }[] }).models.map((m) => m.name).filter((m) => !FUZZ_MODELS.some((own) => sameModel(own, m)));
    for (const model of extra) expect({ model, pulledByAdmin: pulledByAdmin.some((o) => sameModel(modelOf(o), model)) }).toEqual({ model, pulledByAdmin: true });
  });

  test("the rate-limited key ran no more than its limit of models, count_tokens and /api/show", () => {
    const asked = (o: Outcome) => `${o.sent.method} ${new URL(o.sent.url).pathname}`; // the method may be another than the route's
    const ran = outcomes.filter((o) => o.sent.key === "limited" && o.status === 200 && (INFERENCE.has(asked(o)) || LIMITED_READS.has(asked(o))));
    const minutes = Math.ceil(seconds / 60) + 1; // each minute begun gives the key a new budget
    expect(ran.length).toBeLessThanOrEqual(RATE_LIMIT * minutes);
    expect(outcomes.some((o) => o.sent.key === "limited" && o.status === 429)).toBe(true);
  });

  test("no open heartbeat took the declared node: a prompt still goes to n1", async () => {
    const chat = await fetch(`${router.url}/api/chat`, { method: "POST", headers: { authorization: `Bearer ${KEYS.full}` }, body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: false }) });
    expect({ status: chat.status, node: chat.headers.get("x-fleet-node") }).toEqual({ status: 200, node: "n1" });
  });

  test(`tags: ${TAG_ROUNDS} rounds of ${TAGGED} seeded chats with many new tags each; the store's file and the router's memory stay flat across them`, async () => {
    const next = taggedSequence();
    const files: number[] = [];
    const memory: number[] = [];
    const tagged: Outcome[] = [];
    for (let i = 0; i < TAG_ROUNDS; i++) {
      tagged.push(...(await sendAll(next(TAGGED, router.url), CONCURRENCY)));
      memory.push(await settledRss()); // idle long enough for the trace thread to write and prune too
      files.push(storeBytes());
    }
    console.log(`fuzz: tags: store ${files.map((b) => (b / MB).toFixed(1)).join(", ")} MB, RSS ${memory.map((m) => m.toFixed(0)).join(", ")} MB after each round`);
    const problems = tagged.map((o) => problem(o, router.url)).filter((p): p is string => p !== null);
    expect(problems.slice(0, 20)).toEqual([]);
    expect(tagged.filter((o) => o.status === 200).length).toBeGreaterThan(TAG_ROUNDS * TAGGED * 0.9);
    expect(tagged.some((o) => o.status === 400 && o.body.includes("tags: at most 32 in all"))).toBe(true);
    for (const bytes of files) expect(bytes).toBeLessThanOrEqual(STORE_FILE_BOUND);
    for (const settled of memory.slice(1)) expect(settled).toBeLessThan(1.25 * memory[0]!);
    // The traces the store keeps are the newest; a day's tags past its cap are kept as "other".
    const { traces } = await read("/dashboard/api/traces?limit=1000");
    expect(traces.length).toBe(1000);
    const apps = await read("/dashboard/api/apps?days=1");
    expect(apps.by_tag.length).toBeLessThanOrEqual(101);
    expect(apps.by_tag.some((r: { tag: string }) => r.tag === "other")).toBe(true);
  }, 300_000);

  test("malformed HTTP on a raw socket is refused, never a 5xx, and the router goes on", async () => {
    const { hostname, port } = new URL(router.url);
    const cases = [
      "GARBAGE\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: \u0000\u007f\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\"",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n",
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
      `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2000 }, (_, i) => `X-H${i}: v`).join("\r\n")}\r\n\r\n`,
      "GET /healthz\r\n\r\n",
      "\r\n\r\n\r\n",
      "FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /healthz\r\nX: y HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 23\r\n\r\n{\"node_id\":\"a\\r\\nb\"}   ",
      "POST /heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{{{",
    ];
    for (const raw of cases) {
      const answer = await rawExchange(hostname, Number(port), raw);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
      // A refusal, or the connection closed without an answer: either way no 5xx, but HTTP's own 505 for a request
      // line without a version it speaks (HTTP/0.9's, or 9.9).
      const allowed = status < 500 || (status === 505 && !/^\S+ \S+ HTTP\/1\.[01]\r\n/.test(raw));
      if (status) expect({ raw: raw.slice(0, 60), status, allowed }).toEqual({ raw: raw.slice(0, 60), status, allowed: true });
    }
    expect((await getJson(`${router.url}/healthz`)).status).toBe("ok");
  }, 30_000);
});

/** Writes `raw` to a fresh connection; returns whatever comes back before it closes (or a second passes). */
function rawExchange(host: string, port: number, raw: string): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const socket = connect({ host, port }, () => socket.write(raw));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, 1000);
    socket.on("data", (d) => (got += d.toString("latin1")));
    socket.on("close", done);
    socket.on("error", done);
  });
}

const BEATS = 6000;
const BEAT_ROUNDS = 3;

describe.each([
  ["open mode", false],
  ["with a node credential", true],
] as const)("heartbeat fuzz, %s", (_, secure) => {
  let r: Awaited<ReturnType<typeof startRouterProcess>>;
  let store: string;

  beforeAll(async () => {
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    store = join(dir, "data", "herd.sqlite");
    const auth = secure ? { nodeToken: NODE_TOKEN } : {};
    writeFileSync(file, JSON.stringify({ server: { idleShrinkMs: IDLE_SHRINK_MS }, nodes: [{ id: "n1", ollama: sim.url, parallel: 64 }, { id: "mini" }], auth, features: { autoPull: false, visionEmbedding: true } }));
    r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${r.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1")?.status === "online", 3000, "n1 online");
  });
  afterAll(async () => {
    await r?.stop();
  });

  /**
   * What the router holds after a round, settled: its memory (MB), its store (bytes: the database's pages, its write-ahead
   * log's frames included, as a reader sees them; the log file itself only grows to SQLite's checkpoint) and its open descriptors.
   */
  async function footprint() {
    const rss = await settledRss(r.proc.pid);
    const db = new Database(store, { readonly: true });
    const pages = (pragma: string) => Object.values(db.query(`PRAGMA ${pragma}`).get() as object)[0] as number;
    const bytes = (pages("page_count") - pages("freelist_count")) * pages("page_size");
    db.close();
    return { rss, bytes, fds: readdirSync(`/proc/${r.proc.pid}/fd`).length };
  }

  test(`${BEATS} heartbeats from seed ${HEARTBEAT_SEED.toString(16)} in ${BEAT_ROUNDS} rounds: herd's answers only; n1 keeps its models and its view; memory, store and descriptors flat`, async () => {
    const next = heartbeatSequence(secure);
    const rounds: Awaited<ReturnType<typeof footprint>>[] = [];
    const answered = new Map<number, number>();
    for (let i = 0; i < BEAT_ROUNDS; i++) {
      const outcomes = await sendAll(next(BEATS / BEAT_ROUNDS, r.url), CONCURRENCY);
      for (const o of outcomes) answered.set(o.status, (answered.get(o.status) ?? 0) + 1);
      expect(outcomes.map(heartbeatProblem).filter((p) => p !== null).slice(0, 20)).toEqual([]);
      rounds.push(await footprint());
    }
    console.log(`heartbeat fuzz (${secure ? "credential" : "open"}): answers ${JSON.stringify(Object.fromEntries(answered))}; after each round ${rounds.map((f) => `${f.rss.toFixed(0)} MB, ${f.bytes} B, ${f.fds} fds`).join("; ")}`);
    // Each answer was seen: whole reports taken, broken ones refused.
    expect((answered.get(200) ?? 0) > 100 && (answered.get(400) ?? 0) > 100).toBe(true);
    if (secure) expect(answered.get(401) ?? 0).toBeGreaterThan(100);
    const [first, ...later] = rounds;
    for (const f of later) {
      expect(f.rss).toBeLessThan(1.25 * first!.rss);
      expect(f.bytes).toBe(first!.bytes);
      // The client's pooled connections come and go, up to one per request under way; a leak is one per heartbeat.
      expect(f.fds).toBeLessThanOrEqual(first!.fds + CONCURRENCY);
    }

    // What herd shows of n1 is its poll's and its config's alone, and its models are still its own.
    const n1 = (await getJson(`${r.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1");
    expect(n1).toMatchObject({ status: "online", source: "poll", draining: false, ollama_url: sim.url, memory: null, hardware: null, labels: {}, agent_version: null, mlx_servers: [] });
    const ask = async (path: string, body: unknown) => {
      const res = await fetch(`${r.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      await res.arrayBuffer();
      return [res.status, res.headers.get("x-fleet-node")];
    };
    expect(await ask("/api/chat", { model: FLEET_MODELS.chat, messages: [{ role: "user", content: "hi" }], stream: false })).toEqual([200, "n1"]);
    // Open mode: no claim of a native or vision server takes the embedder from n1 (a credential holder's may: seed 000's design).
    if (!secure) expect(await ask("/api/embed", { model: FLEET_MODELS.embedder, input: ["hi"] })).toEqual([200, "n1"]);
    const lines = r.output().split("\n");
    expect(lines.filter((l) => /^\S*\s*INFO forged|^forged/.test(l))).toEqual([]);
    expect(r.output()).not.toMatch(/[\u001b\u009b\u2028\u2029\u202e]/);
  }, 300_000);
});

// A node's answers at scale (issue 27): a stand-in Ollama answers each of NODE_CASES requests, from a fixed seed,
// with a fuzzed status, type and body (test/fuzz-cases.ts:nodeAnswer). Whatever it sends, the router gives no 500,
// every error in its route's format, no answer without an end; what it learns of the node stays within bounds; its
// memory, settled after each round, and its descriptors stay flat.
describe("fuzzed node answers", () => {
  const NODE_CASES = 1200;
  let standIn: ReturnType<typeof Bun.serve>;
  let fuzzed: Awaited<ReturnType<typeof startRouterProcess>>;

  beforeAll(async () => {
    standIn = standInOllama({
      models: [NODE_FUZZ_MODEL],
      async answer(req, path) {
        if (!["/api/chat", "/api/generate", "/api/embed"].includes(path)) return null;
        const asked = /case (\d+)/.exec(await req.text());
        if (!asked) return null;
        const { status, type, pieces, delayMs } = nodeAnswer(Number(asked[1]));
        const utf8 = new TextEncoder();
        const body = new ReadableStream<Uint8Array>({
          async pull(c) {
            const next = pieces.shift();
            if (next === undefined) return c.close();
            if (delayMs) await Bun.sleep(delayMs);
            c.enqueue(typeof next === "string" ? utf8.encode(next) : next);
          },
        });
        return new Response(body, { status, headers: type ? { "content-type": type } : {} });
      },
    });
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    writeFileSync(
      file,
      JSON.stringify({
        server: { ...NODE_FUZZ_CAPS, idleShrinkMs: IDLE_SHRINK_MS },
        nodes: [{ id: "n1", ollama: `http://127.0.0.1:${standIn.port}`, parallel: 16 }],
        timeouts: { firstByteMs: 3000, idleMs: 1000, generationMs: 5000, embeddingMs: 5000 },
        features: { autoPull: false },
      }),
    );
    fuzzed = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${fuzzed.url}/fleet/status`)).fleet.nodes_online === 1, 3000, "n1 online");
  });

  afterAll(async () => {
    await fuzzed?.stop();
    standIn?.stop(true);
  });

  const descriptors = () => readdirSync(`/proc/${fuzzed.proc.pid}/fd`).length;
  /** How many answers had each status. */
  const statuses = new Map<number, number>();

  /** Sends cases [from, to) CONCURRENCY at a time; each one's problem, or null. */
  async function sendCases(from: number, to: number): Promise<(string | null)[]> {
    const problems: (string | null)[] = [];
    let next = from;
    const worker = async () => {
      while (next < to) {
        const { route, url, init } = nodeFuzzRequest(next++, fuzzed.url);
        try {
          const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
          problems.push(nodeFuzzProblem(route, res.status, await res.text()));
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        } catch (e) {
          problems.push(`${route}: ${(e as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return problems;
  }

  test(`${NODE_CASES} answers from seed ${NODE_FUZZ_SEED.toString(16)}: no 500, every error in its format, every answer ended; what herd learned bounded; memory and descriptors flat`, async () => {
    await sendCases(0, 50); // each path once answered: the memory the code itself takes
    const settled = [await settledRss(fuzzed.proc.pid)];
    const fds = [descriptors()];
    const problems: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const from = 50 + (round * NODE_CASES) / ROUNDS;
      problems.push(...(await sendCases(from, from + NODE_CASES / ROUNDS)).filter((p): p is string => p !== null));
      settled.push(await settledRss(fuzzed.proc.pid));
      fds.push(descriptors());
    }
    console.log(`node fuzz: statuses ${JSON.stringify(Object.fromEntries(statuses))}; RSS ${settled.map((m) => m.toFixed(0)).join(", ")} MB settled; descriptors ${fds.join(", ")}`);
    expect(problems.slice(0, 20)).toEqual([]);
    for (const after of settled.slice(1)) expect(after).toBeLessThan(1.25 * settled[0]!);
    // Pooled connections come and go, the client's and herd's to the node up to one per request under way each; a leak is
    // one per answer, hundreds a round.
    for (const after of fds.slice(1)) expect(after).toBeLessThanOrEqual(fds[0]! + 2 * CONCURRENCY);
    const node = (await getJson(`${fuzzed.url}/fleet/status`)).nodes[0];
    for (const s of Object.values(node.speeds) as any[]) {
      if (s.decode_tps !== null) expect(s.decode_tps).toBeLessThanOrEqual(MAX_DECODE_TPS);
      if (s.prefill_tps !== null) expect(s.prefill_tps).toBeLessThanOrEqual(MAX_PREFILL_TPS);
    }
    const traces = (await getJson(`${fuzzed.url}/dashboard/api/traces?limit=1000`)).traces as any[];
    expect(traces.length).toBeGreaterThan(500);
    for (const t of traces) for (const n of [t.prompt_tokens, t.completion_tokens]) expect(n === null || (typeof n === "number" && n >= 0)).toBe(true);
    expect((await getJson(`${fuzzed.url}/healthz`)).status).toBe("ok");
  }, 300_000);
});
