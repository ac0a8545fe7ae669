import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import * as v from "valibot";
import { migrate } from "../store/db.ts";
import { type Heartbeat, heartbeatSchema } from "./heartbeat.ts";
import { markPulled } from "./pulls.ts";
import { MAX_NODE_EVENTS, markEvicted, onDisk, PULL_SETTLE_MS, Registry } from "./registry.ts";
import { quietly, testConfig } from "./test-fixtures.ts";

const config = testConfig({ nodes: [{ id: "mini" }, { id: "studio", ollama: "http://10.0.0.2:11434" }] });
const down = { reachable: false, error: "gone", models_loaded: [], models_available: [], requests_active: 0, version: null };
const claim = (node_id: string): Heartbeat => ({ node_id, ollama_url: "http://203.0.113.9:9999", draining: true, ollama: down });

test("an unproven heartbeat (open mode) sets no address, drains nothing, and says nothing of a polled node's Ollama", () => {
  const registry = new Registry(config);
  quietly(() => {
    registry.polled("studio", { ...down, reachable: true, error: null, models_available: [{ name: "qwen3:8b" }] });
    registry.heartbeat(claim("mini"), "10.0.0.3", false);
    registry.heartbeat(claim("studio"), "10.0.0.9", false);
  });
  const mini = registry.get("mini")!;
  expect(registry.ollamaUrl(mini)).toBe("http://10.0.0.3:11434");
  expect(registry.isDraining(mini)).toBe(false);
  const studio = registry.get("studio")!;
  expect([registry.ollamaUrl(studio), registry.isDraining(studio), studio.source, studio.ollama?.reachable]).toEqual(["http://10.0.0.2:11434", false, "poll", true]);
  expect(studio.ollama?.models_available.map((m) => m.name)).toEqual(["qwen3:8b"]);
  // And herd keeps polling it.
  expect(registry.pollTargets().map((t) => t.id)).toEqual(["studio"]);
});

test("a proven heartbeat (a node credential, or the agent in this process) is believed", () => {
  const registry = new Registry(config);
  quietly(() => registry.heartbeat(claim("mini"), "10.0.0.3", true));
  const mini = registry.get("mini")!;
  expect([registry.ollamaUrl(mini), registry.isDraining(mini), mini.ollama?.reachable]).toEqual(["http://203.0.113.9:9999", true, false]);
});

test("a model pulled through herd stays on the node's disk when a report gathered before the pull ended comes in; later the node's word wins", () => {
  let now = 1_000_000;
  const registry = new Registry(config, null, () => now);
  const up = () => ({ ...down, reachable: true, error: null, models_available: [{ name: "qwen3:8b" }] }); // a report is new each time
  quietly(() => registry.polled("studio", up()));
  const studio = registry.get("studio")!;
  markPulled(studio, "llama3.2:1b", now);
  now += 200;
  quietly(() => registry.polled("studio", up())); // a poll under way before the pull's success line
  expect(onDisk(studio, "llama3.2:1b")).toBe(true);
  now += PULL_SETTLE_MS + 1;
  quietly(() => registry.polled("studio", up())); // the node still does not list it: it is gone (deleted, or the pull lied)
  expect(onDisk(studio, "llama3.2:1b")).toBe(false);
});

/** mini and studio each declare an MLX server and a native text embedding server; den declares none. */
const services = testConfig({
  nodes: [
    { id: "mini", mlx: [{ model: "org/mini-mlx", port: 8081 }], embedding: { text: {} } },
    { id: "studio", ollama: "http://10.0.0.2:11434", mlx: [{ model: "org/studio-mlx", port: 8082 }] },
    { id: "den" },
  ],
});
/** A report of every kind of service, declared or not, and of the machine. */
const everything = (node_id: string): Heartbeat =>
  v.parse(heartbeatSchema, {
    node_id,
    agent_version: "9.9.9",
    labels: { owner: "someone" },
    memory: { total_gb: 1, used_gb: 1, available_gb: 0, pressure: "critical" },
    mlx_servers: ["org/mini-mlx", "org/studio-mlx", "llama3.2:3b"].flatMap((model) => [8081, 8082].map((port) => ({ model, port, status: "healthy" }))),
    text_embedding: { models_available: [{ name: "nomic-embed-text" }] },
    text_embedding_port: 11439,
    vision_embedding: { models_available: [{ name: "nomic-embed-text" }] },
    vision_embedding_port: 11438,
    image_models: [{ name: "x/z-image-turbo", backend: "mflux" }],
    image_port: 11436,
  });

test("of a node's services, an unproven heartbeat says only the state of those the config declares, at their ports; of a polled node, nothing else", () => {
  const registry = new Registry(services);
  quietly(() => {
    for (const id of ["mini", "studio", "den"]) registry.heartbeat(everything(id), "10.0.0.9", false);
  });
  const served = (id: string) => registry.get(id)!.report.mlx_servers?.map((s) => `${s.model}@${s.port}`);
  expect([served("mini"), served("studio"), served("den")]).toEqual([["org/mini-mlx@8081"], ["org/studio-mlx@8082"], []]);
  const mini = registry.get("mini")!.report;
  expect([mini.text_embedding_port, mini.vision_embedding, mini.image_port]).toEqual([11439, undefined, undefined]);
  // A node without an address: the heartbeat is the only word on its machine.
  expect([mini.memory?.total_gb, mini.labels, mini.agent_version]).toEqual([1, { owner: "someone" }, "9.9.9"]);
  // A node herd polls: its services as declared, nothing of the machine.
  expect(Object.keys(registry.get("studio")!.report)).toEqual(["mlx_servers"]);
  expect(registry.get("studio")!.source).toBeNull();
});

test("a vision server's models are declared by the names clients use: its own names for them pass, others do not", () => {
  const registry = new Registry(testConfig({ nodes: [{ id: "mini", embedding: { vision: { models: ["clip", "dinov2-vit-s14"] } } }] }));
  const vision = (names: string[]) =>
    registry.heartbeat(v.parse(heartbeatSchema, { node_id: "mini", vision_embedding: { models_available: names.map((name) => ({ name })) }, vision_embedding_port: 11438 }), "10.0.0.9", false).report.vision_embedding;
  quietly(() => {
    expect(vision(["clip-vit-b32", "dinov2-vit-s14"])?.models_available.map((m) => m.name)).toEqual(["clip-vit-b32", "dinov2-vit-s14"]);
    expect(vision(["clip-vit-b32", "siglip2-base"])).toBeUndefined();
  });
});

test("a goodbye without a credential is not believed: the node is not taken out of service", () => {
  const registry = new Registry(services);
  quietly(() => {
    registry.heartbeat(everything("mini"), "10.0.0.3", false);
    registry.heartbeat({ node_id: "mini", goodbye: true }, "10.0.0.9", false);
  });
  expect([registry.get("mini")!.status, registry.get("mini")!.report.memory?.total_gb]).toEqual(["online", 1]);
  quietly(() => registry.heartbeat({ node_id: "mini", goodbye: true }, null, true));
  expect([registry.get("mini")!.status, registry.get("mini")!.report]).toEqual(["offline", {}]);
});

test("an agent silent past heartbeat.offlineMs has left, said once; what it said of a polled node goes with it", () => {
  let now = 1_000_000;
  const registry = new Registry(services, null, () => now);
  const lines: string[] = [];
  quietly(() => registry.heartbeat(everything("studio"), "10.0.0.2", false), lines);
  expect(lines).toEqual([expect.stringContaining("node studio: agent 9.9.9 joined from 10.0.0.2 without a credential; herd polls its Ollama at http://10.0.0.2:11434")]);
  expect(registry.get("studio")!.report.mlx_servers).toHaveLength(1);
  now += services.heartbeat.offlineMs + 1;
  quietly(() => {
    registry.tick();
    registry.tick();
  }, lines);
  expect(lines.slice(1)).toEqual([expect.stringContaining("node studio: agent left (no heartbeat for 30 s)")]);
  expect(registry.get("studio")!.report).toEqual({});
});

test("the store keeps the newest MAX_NODE_EVENTS transitions, however often an agent comes and goes", () => {
  const store = new Database(":memory:");
  migrate(store);
  const registry = new Registry(services, store);
  quietly(() => {
    for (let i = 0; i < MAX_NODE_EVENTS / 2 + 50; i++) {
      registry.heartbeat({ node_id: "den" }, null, true);
      registry.heartbeat({ node_id: "den", goodbye: true }, null, true);
    }
  });
  const rows = store.query("SELECT COUNT(*) AS n, MAX(id) AS last FROM node_events").get() as { n: number; last: number };
  expect(rows).toEqual({ n: MAX_NODE_EVENTS, last: MAX_NODE_EVENTS + 100 });
});

test("the models a node unloaded are kept as warm up to a bound, whatever it reports", () => {
  const registry = new Registry(services);
  const loading = (names: string[]): Heartbeat => ({ node_id: "den", ollama: { ...down, reachable: true, error: null, models_loaded: names.map((name) => ({ name, size_gb: 1 })) } });
  quietly(() => {
    for (let beat = 0; beat < 5; beat++) registry.heartbeat(loading(Array.from({ length: 1000 }, (_, i) => `m${beat}-${i}:1b`)), null, true);
  });
  expect(registry.get("den")!.unloadedAt.size).toBe(1000);
});

test("a model herd expects a load to evict is gone from the node's loaded list at once, until the next report says otherwise", () => {
  const registry = new Registry(config);
  const loaded = (names: string[]) => names.map((name) => ({ name, size_gb: 5, context_length: 4096 }));
  const report = { ...down, reachable: true, error: null, models_loaded: loaded(["qwen3:8b", "llama3.2:3b"]), models_available: [{ name: "qwen3:8b" }, { name: "llama3.2:3b" }] };
  quietly(() => registry.polled("studio", report));
  const studio = registry.get("studio")!;
  const before = studio.ollama!.models_loaded;
  markEvicted(studio, ["Qwen3:8b"]);
  expect(studio.ollama!.models_loaded.map((m) => m.name)).toEqual(["llama3.2:3b"]);
  expect(before).toHaveLength(2); // a new list: the routing views cached per list see the change
  expect(studio.unloadedAt.has("Qwen3:8b")).toBe(true);
  quietly(() => registry.polled("studio", { ...report, models_loaded: loaded(["qwen3:8b", "llama3.2:3b"]) })); // the node still has it after all: its word wins
  expect(studio.ollama!.models_loaded.map((m) => m.name)).toEqual(["qwen3:8b", "llama3.2:3b"]);
});

test("the most a node's loaded models took together in any report is kept, an eviction herd expects leaves it, and it goes with the agent", () => {
  const registry = new Registry(config);
  quietly(() => {
    registry.polled("studio", report({ "m0:1b": 10, "m1:1b": 5 }));
    registry.polled("studio", report({ "m1:1b": 3 }));
  });
  const studio = registry.get("studio")!;
  expect(studio.mostLoadedGb).toBe(15);
  markEvicted(studio, ["m1:1b"]);
  expect(studio.mostLoadedGb).toBe(15);
  quietly(() => {
    registry.heartbeat({ node_id: "den", ollama: report({ "a:1b": 8, "b:1b": 8 }) }, null, true);
    registry.heartbeat({ node_id: "den", goodbye: true }, null, true);
  });
  expect(registry.get("den")!.mostLoadedGb).toBe(0);
});

test("a node's Ollama unloaded a model for room when a load came with more unloads than its count of models explains", () => {
  const registry = new Registry(config);
  const seen = (...reports: Record<string, number>[]) => {
    quietly(() => {
      for (const r of reports) registry.polled("studio", report(r));
    });
    return registry.get("studio")!.unloadedForRoom;
  };
  // A fourth model unloads one by the count (3); one unloaded with no load beside it ran out its keep_alive.
  expect(seen({ a: 1, b: 1, c: 1 }, { b: 1, c: 1, d: 1 }, { c: 1, d: 1 })).toBe(false);
  // A load that took two others with it: room.
  expect(seen({ c: 1, d: 1, e: 1 }, { e: 1, f: 20 })).toBe(true);
});

const report = (sizes: Record<string, number>) => ({ ...down, reachable: true, error: null, models_loaded: Object.entries(sizes).map(([name, size_gb]) => ({ name, size_gb })) });

test("a node of unknown memory takes the automatic context its loaded models show, kept once they unload", () => {
  const registry = new Registry(config);
  const ps = (context_length: number | undefined) => ({ ...down, reachable: true, error: null, version: "0.33.0", models_loaded: context_length === undefined ? [] : [{ name: "gemma3:12b", size_gb: 9, context_length }] });
  quietly(() => registry.polled("studio", ps(8192)));
  const studio = registry.get("studio")!;
  expect(registry.defaultContextOf(studio)).toEqual({ numCtx: 4096, source: "assumed" });
  quietly(() => {
    registry.polled("studio", ps(131072));
    registry.polled("studio", ps(undefined));
  });
  expect(registry.defaultContextOf(studio)).toEqual({ numCtx: 262144, source: "shown" });
});
