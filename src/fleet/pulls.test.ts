import { expect, test } from "bun:test";
import { markPulled, notPullable, placePull, Pulls, pullTargets } from "./pulls.ts";
import { onDisk } from "./registry.ts";
import { type NodeSpec, testFleet } from "./test-fixtures.ts";

test("image, speech and MLX models are refused for an Ollama pull, with the way to install them instead", () => {
  expect(notPullable("flux-dev")).toBe('"flux-dev" is an mflux image model, not an Ollama model; install it with: uv tool install mflux (then run it on the node)');
  expect(notPullable("Z-Image-Turbo:latest")).toStartWith('"Z-Image-Turbo:latest" is an mflux image model');
  expect(notPullable("sd3.5-large")).toContain("a DiffusionKit image model");
  expect(notPullable("qwen3-asr-1.7b")).toContain("a Qwen3-ASR speech-to-text model");
  expect(notPullable("mlx-community/Qwen3-8B-4bit")).toContain("add it to the node's mlx servers");
  expect(notPullable("mlx:qwen3")).toContain("an MLX model");
});

test("Ollama's own models can be pulled, names that merely resemble an image model included", () => {
  for (const model of ["llama3.2", "qwen3:8b", "hf.co/org/flux-dev-GGUF:Q4_K_M", "flux-dev-chat:7b"]) expect(notPullable(model)).toBeNull();
});

test("a model is pulled once at a time fleet-wide, whatever the spelling of its tag", () => {
  const pulls = new Pulls();
  expect(pulls.begin("llama3.2", "studio")).toBeNull();
  expect(pulls.begin("llama3.2:latest", "mini")).toBe("studio");
  expect(pulls.begin("qwen3:8b", "mini")).toBeNull();
  pulls.end("llama3.2:latest");
  expect(pulls.begin("llama3.2", "mini")).toBeNull();
});

test("a pull goes to the online, undrained node with the most free memory, equal ones by id", () => {
  const memory = (availableGb: number) => ({ totalGb: 128, availableGb });
  const nodes: NodeSpec[] = [
    { id: "roomy-but-gone", memory: memory(120), offline: true },
    { id: "roomy-but-leaving", memory: memory(110), draining: true },
    { id: "roomy-but-broken", memory: memory(100), ollamaDown: true },
    { id: "b", memory: memory(40) },
    { id: "a", memory: memory(40) },
    { id: "agentless" },
  ];
  expect(pullTargets(testFleet(nodes).registry).map((n) => n.id)).toEqual(["a", "b", "agentless"]);
  expect(pullTargets(testFleet([{ id: "agentless" }, { id: "small", memory: memory(1) }]).registry)[0]?.id).toBe("small");
  expect(pullTargets(testFleet(nodes.slice(0, 3)).registry)).toEqual([]);
});

test("a pull goes to the first node that may have room, judged by what herd knows of each; none is a refusal with the arithmetic", () => {
  const memory = (availableGb: number) => ({ totalGb: 64, availableGb });
  const place = (registry: Parameters<typeof placePull>[0], model: string) => {
    const p = placePull(registry, model, pullTargets(registry));
    return p && ("node" in p ? p.node.id : p.refused);
  };
  const { registry } = testFleet([{ id: "a", memory: memory(30) }, { id: "b", memory: memory(12.5) }, { id: "has", memory: memory(1), onDisk: { "big:1b": 40 }, draining: true }]);
  expect(place(registry, "llama3.3:70b")).toBe('No node has enough available memory for "llama3.3:70b" (48 GB): a has 30 GB available, 18 GB short; b has 12.5 GB available, 35.5 GB short');
  // The size a node lists on disk comes first, then the catalog's, then the weights the name tells.
  expect(place(registry, "big:1b")).toStartWith('No node has enough available memory for "big:1b" (40 GB)');
  expect(place(registry, "llama3.1:405b")).toStartWith('No node has enough available memory for "llama3.1:405b" (~228.7 GB, estimated from its name): a has 30 GB available');
  expect(place(registry, "llama3.2:3b")).toBe("a");
  expect(place(registry, "never-heard-of")).toBe("a");
  // A node of unknown memory may have room: the known ones are still judged, and too small, passed over.
  const agentless = testFleet([{ id: "a", memory: memory(1) }, { id: "agentless" }]).registry;
  expect(place(agentless, "llama3.3:70b")).toBe("agentless");
  expect(place(agentless, "qwen2.5:0.5b")).toBe("a");
  // Declared memory, less the OS's share, is known memory too.
  const declared = testFleet([{ id: "small", hardware: { memoryGb: 16 } }]).registry;
  expect(place(declared, "qwen3:32b")).toBe('No node has enough available memory for "qwen3:32b" (23 GB): small has 10 GB (16 GB less a 6 GB OS reserve), 13 GB short');
  expect(placePull(declared, "qwen3:8b", [])).toBeNull();
});

test("after a pull the model is on the node's disk at once, listed once, under its full name", () => {
  const node = testFleet([{ id: "n", onDisk: { "qwen3:8b": 5 } }]).registry.get("n")!;
  markPulled(node, "llama3.2");
  markPulled(node, "llama3.2:latest");
  markPulled(node, "QWEN3:8b");
  expect(node.ollama!.models_available.map((m) => m.name)).toEqual(["qwen3:8b", "llama3.2:latest"]);
  expect(onDisk(node, "llama3.2")).toBe(true);
  const neverReported = { ...node, ollama: null };
  markPulled(neverReported, "llama3.2");
  expect(neverReported.ollama).toBeNull();
});

test("a pull replaces the node's list of models instead of editing it: the router caches its views of a node by that list", () => {
  const node = testFleet([{ id: "n", onDisk: { "qwen3:8b": 5 } }]).registry.get("n")!;
  const before = node.ollama!.models_available;
  markPulled(node, "llama3.2");
  expect(node.ollama!.models_available).not.toBe(before);
  expect(before.map((m) => m.name)).toEqual(["qwen3:8b"]);
});
