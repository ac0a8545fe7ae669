import { afterEach, beforeEach, expect, mock, spyOn, test } from "bun:test";
import { loadModel } from "../backends/ollama.ts";
import { log } from "../log.ts";
import { type LoadModel, startPreloader, Warmer } from "./preloader.ts";
import { type NodeSpec, testFleet, testPins } from "./test-fixtures.ts";

/** What the fake fetch was asked: the node's host and the model it was told to load, and each request's body. */
let asked: { host: string; model: string; body: Record<string, unknown> }[];
/** How the fake node answers a load. */
let answer: () => Promise<Response>;
/** The Ollama backend's own load, as the runtime gives it, over the fake fetch. */
let warmer: Warmer;
const warm = (url: string, model: string, timeoutMs: number) => warmer.warm("studio", url, model, timeoutMs);
const load: LoadModel = (url, model, timeoutMs, keep) => loadModel(url, model, timeoutMs, keep, { bytes: 2 ** 20, setting: "server.maxNodeAnswerMb" });

beforeEach(() => {
  warmer = new Warmer(load);
  asked = [];
  answer = async () => Response.json({ done: true });
  spyOn(globalThis, "fetch").mockImplementation((async (url: string | URL, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body));
    asked.push({ host: new URL(url).host, model: body.model, body });
    return answer();
  }) as typeof fetch);
});
afterEach(() => mock.restore());

/** Holds the fake node's answers until the function returned is called; from then on it answers at once. */
function holdAnswers(): () => void {
  const held: (() => void)[] = [];
  answer = () => new Promise((resolve) => held.push(() => resolve(Response.json({}))));
  return () => {
    answer = async () => Response.json({});
    for (const reply of held.splice(0)) reply();
  };
}

/** Lets the loads under way finish: the fake node answers within a few ms. */
const settle = () => Bun.sleep(5);

test("warming asks the node's Ollama to load the model and keep it: an empty prompt, keep_alive -1, no stream", async () => {
  await warm("http://studio.test:11434", "qwen3:8b", 1000);
  expect(asked).toEqual([{ host: "studio.test:11434", model: "qwen3:8b", body: { model: "qwen3:8b", prompt: "", keep_alive: -1, stream: false } }]);
});

test("a load's duration is told with the node it ran on, once for a shared warm: the node's load_duration, else the call's own time", async () => {
  const loads: [string, string, number][] = [];
  warmer = new Warmer(load, (...load) => loads.push(load));
  answer = async () => (await Bun.sleep(300), Response.json({ done: true, load_duration: 290_000_000 }));
  await Promise.all([warm("http://studio.test:11434", "qwen3:8b", 1000), warm("http://studio.test:11434", "qwen3:8b", 1000)]);
  expect(loads).toEqual([["studio", "qwen3:8b", 290_000_000]]);
  answer = async () => (await Bun.sleep(30), Response.json({ done: true, done_reason: "load" }));
  await warm("http://studio.test:11434", "qwen3:8b", 1000);
  expect(loads).toHaveLength(2);
  expect(loads[1]![2]).toBeGreaterThanOrEqual(25e6);
});

test("each load is told as it goes and as it ends, failed or not, once for a shared warm: the loads routed behind it wait for it", async () => {
  const told: string[] = [];
  warmer = new Warmer(load, undefined, (node, model) => (told.push(`sent ${node} ${model}`), () => told.push(`ended ${node} ${model}`)));
  answer = async () => (await Bun.sleep(30), Response.json({ done: true }));
  const shared = [warm("http://studio.test:11434", "qwen3:8b", 1000), warm("http://studio.test:11434", "qwen3:8b", 1000)];
  expect(told).toEqual(["sent studio qwen3:8b"]);
  await Promise.all(shared);
  answer = async () => new Response("boom", { status: 500 });
  await warm("http://studio.test:11434", "qwen3:8b", 1000).catch(() => {});
  expect(told).toEqual(["sent studio qwen3:8b", "ended studio qwen3:8b", "sent studio qwen3:8b", "ended studio qwen3:8b"]);
});

test("a load_duration is held to the call's own time: never longer, nor much shorter", async () => {
  const loads: number[] = [];
  warmer = new Warmer(load, (_node, _model, ns) => loads.push(ns));
  answer = async () => Response.json({ done: true, load_duration: 2_500_000_000 }); // at once
  await warm("http://studio.test:11434", "qwen3:8b", 1000);
  answer = async () => (await Bun.sleep(300), Response.json({ done: true, load_duration: 1 }));
  await warm("http://studio.test:11434", "llama3.2", 1000);
  expect(loads[0]!).toBeLessThan(100e6);
  expect(loads[1]!).toBeGreaterThan(200e6);
  expect(loads[1]!).toBeLessThan(400e6);
});

test("a node:model is warmed once at a time: a warm while one runs shares it, one after it asks again", async () => {
  const release = holdAnswers();
  const first = warm("http://studio.test:11434", "llama3.2", 1000);
  expect(warm("http://studio.test:11434", "llama3.2:latest", 1000)).toBe(first);
  const elsewhere = warm("http://mini.test:11434", "llama3.2", 1000);
  expect(asked.map((a) => a.host)).toEqual(["studio.test:11434", "mini.test:11434"]);
  release();
  await Promise.all([first, elsewhere]);
  await warm("http://studio.test:11434", "llama3.2", 1000);
  expect(asked).toHaveLength(3);
});

test("a load the node refuses fails with Ollama's error, or with the HTTP status when it gives none", async () => {
  answer = async () => Response.json({ error: "model requires more system memory (40 GiB) than is available (12 GiB)" }, { status: 500 });
  await expect(warm("http://studio.test:11434", "llama3.3:70b", 1000)).rejects.toThrow("model requires more system memory (40 GiB) than is available (12 GiB)");
  answer = async () => new Response("<html>bad gateway</html>", { status: 502 });
  await expect(warm("http://studio.test:11434", "qwen3:8b", 1000)).rejects.toThrow("HTTP 502");
});

test("the warmer tells each load under way (node, model, since) and each whose last try failed, its error one bounded line, until a load of it works", async () => {
  const release = holdAnswers();
  const before = Date.now();
  const under = warm("http://studio.test:11434", "qwen3:8b", 1000);
  expect(warmer.states()).toEqual([{ node_id: "studio", model: "qwen3:8b", state: "loading", since: expect.any(Number) }]);
  expect((warmer.states()[0] as { since: number }).since).toBeGreaterThanOrEqual(before);
  release();
  await under;
  expect(warmer.states()).toEqual([]);
  answer = async () => Response.json({ error: `out of memory\r\nINFO forged ${"x".repeat(1000)}` }, { status: 500 });
  const refused = await warm("http://studio.test:11434", "qwen3:8b", 1000).then(() => "loaded", (e: Error) => e.message);
  expect(refused).toStartWith("out of memory INFO forged xxx");
  expect(refused).toHaveLength(501);
  expect(warmer.states()).toEqual([{ node_id: "studio", model: "qwen3:8b", state: "failed", at: expect.any(Number), error: refused }]);
  answer = async () => Response.json({ done: true });
  await warm("http://studio.test:11434", "qwen3:8b", 1000);
  expect(warmer.states()).toEqual([]);
});

test("a node that cannot be reached, or does not answer in time, fails saying so", async () => {
  answer = async () => Promise.reject(Object.assign(new Error("Unable to connect"), { code: "ConnectionRefused" }));
  await expect(warm("http://gone.test:11434", "qwen3:8b", 1000)).rejects.toThrow("connection refused");
  answer = async () => Promise.reject(new DOMException("The operation timed out.", "TimeoutError"));
  await expect(warm("http://slow.test:11434", "qwen3:8b", 250)).rejects.toThrow("no answer within 250 ms");
});

/**
 * Runs `count` preloader cycles over `nodes` with the config's `pins` (`config` is the rest of it) and
 * waits for the loads they start; returns the warnings logged.
 */
async function cycles(count: number, nodes: NodeSpec[], pins: Record<string, string[]>, config: Record<string, unknown> = {}): Promise<string[]> {
  const warnings: string[] = [];
  spyOn(log, "warn").mockImplementation((m) => void warnings.push(m));
  spyOn(log, "info").mockImplementation(() => {});
  const { registry } = testFleet(nodes);
  const { pins: pinned, live } = await testPins(registry, pins, config);
  // The preloader reads only these: no Runtime needed.
  const rt = { registry, pins: pinned, live, warmer };
  let done!: () => void;
  const ran = new Promise<void>((resolve) => (done = resolve));
  let armed = 0;
  // A timer of 0 ms for each cycle asked for; the preloader arms the next one as a cycle ends.
  const preloader = startPreloader(rt, () => (armed++ < count ? 0 : (done(), 60_000)));
  await ran;
  preloader.stop();
  await settle();
  return warnings;
}

const loads = () => asked.map((a) => `${a.host.replace(".test:11434", "")} ${a.model}`).sort();

test("a cycle loads each node's pins that are on its disk but not loaded, a node's loads one after another", async () => {
  const nodes: NodeSpec[] = [
    { id: "studio", loaded: { "qwen3:8b": 5 }, onDisk: { "llama3.2:3b": 2 } },
    { id: "mini", onDisk: { "llama3.2:3b": 2, "qwen3:8b": 5 } },
  ];
  const release = holdAnswers();
  const warnings = await cycles(1, nodes, { "*": ["qwen3:8b"], studio: ["llama3.2:3b"], mini: ["llama3.2:3b"] });
  expect(loads()).toEqual(["mini qwen3:8b", "studio llama3.2:3b"]);
  release();
  await settle();
  expect(loads()).toEqual(["mini llama3.2:3b", "mini qwen3:8b", "studio llama3.2:3b"]);
  expect(warnings).toEqual([]);
});

test("a node that cannot take a load now is skipped", async () => {
  const has = { onDisk: { "qwen3:8b": 5 } };
  await cycles(1, [{ id: "gone", ...has, offline: true }, { id: "broken", ...has, ollamaDown: true }], { "*": ["qwen3:8b"] });
  expect(loads()).toEqual([]);
});

test("only the first preloader.maxCount pins are kept loaded, and a pin not on the node's disk is not pulled; each is said once", async () => {
  const studio: NodeSpec = { id: "studio", onDisk: { "a:1b": 1, "b:1b": 1, "c:1b": 1 } };
  const warnings = await cycles(2, [studio], { studio: ["a:1b", "missing:7b", "b:1b", "c:1b"] }, { preloader: { maxCount: 3 } });
  expect(new Set(loads())).toEqual(new Set(["studio a:1b", "studio b:1b"]));
  expect(warnings).toEqual([
    "node studio has 4 pins but preloader.maxCount is 3; keeping only a:1b, missing:7b, b:1b loaded",
    "preloader: pinned missing:7b is not on disk on studio; pull it there (the preloader does not pull)",
  ]);
});

test("with the preloader disabled nothing is loaded", async () => {
  await cycles(1, [{ id: "studio", onDisk: { "qwen3:8b": 5 } }], { studio: ["qwen3:8b"] }, { preloader: { enabled: false } });
  expect(loads()).toEqual([]);
});
