import { expect, test } from "bun:test";
import { Pins, loadableUrl } from "./pins.ts";
import { type NodeSpec, quietly, testFleet, testPins } from "./test-fixtures.ts";

/** Pins over a fleet of `nodes`, with the config's `pins` as written in herd.config.ts. */
async function pinsOn(pins: Record<string, string[]>, nodes: NodeSpec[] = []) {
  const { registry } = testFleet(nodes);
  return { ...(await testPins(registry, pins)), registry };
}

const models = (pins: Pins, nodeId: string) => pins.on(nodeId).map((p) => `${p.model} (${p.source})`);

test("a node's pins are the config's for every node, then the config's for it, then the API's, each model once", async () => {
  const { pins } = await pinsOn({ "*": ["nomic-embed-text"], studio: ["qwen3:8b", "nomic-embed-text:latest"] });
  expect(quietly(() => [pins.add("studio", "llama3.2"), pins.add("studio", "Qwen3:8b"), pins.add("studio", "llama3.2:latest")])).toEqual([true, false, false]);
  expect(models(pins, "studio")).toEqual(["nomic-embed-text (config)", "qwen3:8b (config)", "llama3.2:latest (runtime)"]);
  expect(models(pins, "mini")).toEqual(["nomic-embed-text (config)"]);
});

test("unpinning removes the API's pins only, on one node or on all, and names the nodes it was unpinned from", async () => {
  const { pins } = await pinsOn({ studio: ["qwen3:8b"] });
  quietly(() => ["studio", "mini", "laptop"].forEach((node) => pins.add(node, "llama3.2:3b")));
  expect(quietly(() => pins.remove("llama3.2:3b", "mini"))).toEqual(["mini"]);
  expect(quietly(() => pins.remove("LLAMA3.2:3b")).sort()).toEqual(["laptop", "studio"]);
  expect(quietly(() => pins.remove("qwen3:8b"))).toEqual([]);
  expect(models(pins, "studio")).toEqual(["qwen3:8b (config)"]);
});

test("the API's pins outlive the router: a new Pins over the same store has them", async () => {
  const { pins, store, live, registry } = await pinsOn({});
  quietly(() => pins.add("studio", "qwen3:8b"));
  expect(models(new Pins(store, live, registry), "studio")).toEqual(["qwen3:8b (runtime)"]);
});

test("the config keys that pin a model are named, those for one node including \"*\"", async () => {
  const { pins } = await pinsOn({ "*": ["nomic-embed-text"], studio: ["nomic-embed-text", "qwen3:8b"], mini: ["qwen3:8b"] });
  expect(pins.configured("nomic-embed-text:latest")).toEqual(["*", "studio"]);
  expect(pins.configured("qwen3:8b", "studio")).toEqual(["studio"]);
  expect(pins.configured("nomic-embed-text", "laptop")).toEqual(["*"]);
  expect(pins.configured("llama3.2")).toEqual([]);
});

test("every node with a pin is listed, by id, whether the registry knows it yet or not; nodes without pins are not", async () => {
  const { pins } = await pinsOn({ studio: ["qwen3:8b"], laptop: ["llama3.2:3b"] }, [{ id: "studio" }, { id: "mini" }]);
  quietly(() => pins.add("future", "phi4"));
  expect(pins.perNode()).toEqual({ future: ["phi4:latest"], laptop: ["llama3.2:3b"], studio: ["qwen3:8b"] });
});

test("a new pin must fit beside the node's other pins in its memory less 6 GB: resident size if loaded, else size on disk", async () => {
  const studio: NodeSpec = { id: "studio", memory: { totalGb: 64, availableGb: 30 }, loaded: { "qwen3:32b": 22.5 }, onDisk: { "llama3.3:70b": 42, "qwen3:8b": 5.2 } };
  const { pins, registry } = await pinsOn({ studio: ["qwen3:32b", "mystery:7b"] }, [studio]);
  const node = registry.get("studio")!;
  expect(pins.coResidence(node, "qwen3:8b")).toEqual({
    fits: true,
    totalGb: 64,
    capacityGb: 58,
    neededGb: 27.7,
    sizes: [
      { model: "qwen3:32b", size_gb: 22.5 },
      { model: "mystery:7b", size_gb: 0 },
      { model: "qwen3:8b", size_gb: 5.2 },
    ],
  });
  expect(pins.coResidence(node, "llama3.3:70b")).toMatchObject({ fits: false, neededGb: 64.5 });
  // Re-pinning a model already pinned counts it once.
  expect(pins.coResidence(node, "qwen3:32b")).toMatchObject({ fits: true, neededGb: 22.5 });
});

test("a node that does not report its memory cannot be checked", async () => {
  const { pins, registry } = await pinsOn({}, [{ id: "agentless", onDisk: { "qwen3:8b": 5 } }]);
  expect(pins.coResidence(registry.get("agentless")!, "qwen3:8b")).toBeNull();
});

test("a node can take a load only while it is online with its Ollama reachable", () => {
  const { registry } = testFleet([{ id: "up" }, { id: "gone", offline: true }, { id: "broken", ollamaDown: true }]);
  expect(["up", "gone", "broken"].map((id) => loadableUrl(registry, registry.get(id)!))).toEqual(["http://up.test:11434", null, null]);
});
