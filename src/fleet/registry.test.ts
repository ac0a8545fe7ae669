import { expect, test } from "bun:test";
import type { Heartbeat } from "./heartbeat.ts";
import { markPulled } from "./pulls.ts";
import { onDisk, PULL_SETTLE_MS, Registry } from "./registry.ts";
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
