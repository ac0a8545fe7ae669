import { expect, test } from "bun:test";
import { type NodeSpec, testFleet } from "../fleet/test-fixtures.ts";
import { resolveModel } from "./model-resolution.ts";

/** A node with a model of every kind loaded. */
const studio: NodeSpec = {
  id: "studio",
  loaded: {
    "llama3.2:3b": 2,
    "qwen2.5:7b": 5,
    "qwen2.5-coder:7b": 5,
    "qwen2.5-coder:32b": 20,
    "deepseek-r1:14b": 9,
    "qwen3:32b": 20,
    "gemma3:12b": 9,
    "nomic-embed-text": 0.3,
  },
};

interface Ask {
  vision?: boolean;
  tools?: boolean;
  strict?: boolean;
  /** The rest of the config, as written in herd.config.ts. */
  config?: Record<string, unknown>;
  /** The client key's models, when it has a list. */
  allowed?: RegExp;
}

function resolve(nodes: NodeSpec[], requested: string, ask: Ask = {}) {
  const { registry, config } = testFleet(nodes, ask.config);
  const grant = ask.allowed ? { mayPull: false, mayServe: (m: string) => ask.allowed!.test(m) } : null;
  return resolveModel(registry, config, requested, { vision: ask.vision ?? false, tools: ask.tools }, ask.strict ?? false, grant);
}

const modelFor = (nodes: NodeSpec[], requested: string, ask?: Ask) => resolve(nodes, requested, ask)?.model ?? null;

test("a modelMap entry wins, an exact key before any glob, strict or not, and the reason names it", () => {
  const config = { modelMap: { "claude-*": "qwen3:32b", "claude-haiku-4-5": "llama3.2:3b" } };
  expect(resolve([studio], "claude-haiku-4-5", { config })).toEqual({ model: "llama3.2:3b", reason: 'modelMap maps "claude-haiku-4-5" to "llama3.2:3b"' });
  expect(resolve([studio], "claude-opus-4-1", { config, strict: true })?.model).toBe("qwen3:32b");
});

test("an MLX server's model is served under the name asked for", () => {
  const mac = { id: "mac", mlx: ["mlx-community/Qwen3-8B-4bit"] };
  expect(resolve([mac], "mlx-community/Qwen3-8B-4bit")).toEqual({ model: "mlx-community/Qwen3-8B-4bit", reason: "an MLX server's model" });
  expect(resolve([], "mlx:some/model")?.model).toBe("mlx:some/model");
});

test("a strict request gets the very name it sent, even one no node has: never a substitute", () => {
  expect(resolve([studio], "claude-sonnet-4-5", { strict: true })).toEqual({ model: "claude-sonnet-4-5:latest", reason: "exactly as named (strict: no substitution)" });
});

test("a local model of the name asked for is served as it is", () => {
  expect(resolve([studio], "qwen2.5-coder:7b")).toEqual({ model: "qwen2.5-coder:7b", reason: "a local model of that name" });
  expect(modelFor([{ id: "n", onDisk: { "phi4:latest": 9 } }], "phi4")).toBe("phi4:latest");
});

test("claude-*-haiku (and any mini or nano) is the small tier: the smallest general model", () => {
  expect(resolve([studio], "claude-haiku-4-5")).toEqual({ model: "llama3.2:3b", reason: "auto-routed (small tier) to the best loaded model" });
  expect(modelFor([studio], "gpt-5-mini")).toBe("llama3.2:3b");
  expect(modelFor([studio], "gpt-4.1-nano")).toBe("llama3.2:3b");
});

test("claude-*-sonnet and other agents' ids (gpt-5-codex) are the coding tier: the largest coder", () => {
  expect(resolve([studio], "claude-sonnet-4-5")).toEqual({ model: "qwen2.5-coder:32b", reason: "auto-routed (coding tier) to the best loaded model" });
  expect(modelFor([studio], "gpt-5-codex")).toBe("qwen2.5-coder:32b");
});

test("claude-*-opus is the large tier: the largest reasoning model", () => {
  expect(modelFor([studio], "claude-opus-4-1")).toBe("qwen3:32b");
});

test("with no model of a tier's first kind, the tier's next kind is taken", () => {
  const coders: NodeSpec = { id: "n", loaded: { "qwen2.5-coder:7b": 5, "qwen2.5-coder:32b": 20 } };
  expect(modelFor([coders], "claude-haiku-4-5")).toBe("qwen2.5-coder:7b"); // small: the smallest, of the coders
  expect(modelFor([coders], "claude-opus-4-1")).toBe("qwen2.5-coder:32b");
});

test("a request with tools prefers a model that can call them", () => {
  const thinkers: NodeSpec = { id: "n", loaded: { "deepseek-r1:70b": 40, "qwen3:8b": 5 } };
  expect(modelFor([thinkers], "claude-opus-4-1")).toBe("deepseek-r1:70b");
  expect(modelFor([thinkers], "claude-opus-4-1", { tools: true })).toBe("qwen3:8b");
  // When no model has tools, the request still gets the tier's best.
  expect(modelFor([{ id: "n", loaded: { "deepseek-r1:70b": 40 } }], "claude-opus-4-1", { tools: true })).toBe("deepseek-r1:70b");
});

test("a request with images goes to anthropic.visionModel when one is set, else to a vision model, else nowhere", () => {
  expect(resolve([studio], "claude-sonnet-4-5", { vision: true, config: { anthropic: { visionModel: "llava:7b" } } })).toEqual({
    model: "llava:7b",
    reason: "the request carries images: anthropic.visionModel",
  });
  expect(resolve([studio], "claude-sonnet-4-5", { vision: true })).toEqual({ model: "gemma3:12b", reason: "auto-routed (coding tier, needs vision) to the best loaded model" });
  expect(resolve([{ id: "n", loaded: { "qwen2.5-coder:7b": 5 } }], "claude-sonnet-4-5", { vision: true })).toBeNull();
});

test("a loaded model beats a better one on disk; with none loaded, the best on disk is named", () => {
  const node: NodeSpec = { id: "n", loaded: { "qwen2.5-coder:7b": 5 }, onDisk: { "qwen2.5-coder:32b": 20 } };
  expect(modelFor([node], "claude-sonnet-4-5")).toBe("qwen2.5-coder:7b");
  expect(resolve([{ id: "n", onDisk: { "qwen2.5-coder:7b": 5, "qwen2.5-coder:32b": 20 } }], "claude-sonnet-4-5")).toEqual({
    model: "qwen2.5-coder:32b",
    reason: "auto-routed (coding tier) to the best model on disk; none was loaded",
  });
});

test("an embedding model is never picked for a chat", () => {
  expect(modelFor([{ id: "n", loaded: { "nomic-embed-text": 0.3 }, onDisk: { "llama3.2:3b": 2 } }], "claude-sonnet-4-5")).toBe("llama3.2:3b");
  expect(modelFor([{ id: "n", loaded: { "nomic-embed-text": 0.3 } }], "claude-sonnet-4-5")).toBeNull();
});

test("only nodes that can serve count: not an offline or draining one, nor one whose Ollama is down", () => {
  const elsewhere = { loaded: { "qwen2.5-coder:32b": 20 } };
  const nodes: NodeSpec[] = [
    { id: "gone", ...elsewhere, offline: true },
    { id: "leaving", ...elsewhere, draining: true },
    { id: "broken", ...elsewhere, ollamaDown: true },
    { id: "small", loaded: { "llama3.2:3b": 2 } },
  ];
  expect(modelFor(nodes, "claude-sonnet-4-5")).toBe("llama3.2:3b");
  expect(resolve(nodes, "qwen2.5-coder:32b")?.reason).toBe("auto-routed (coding tier) to the best loaded model");
});

test("with no node that can serve, the best model of one that is down is named all the same (the client gets a 503, not a 404); a draining one's never", () => {
  const down: NodeSpec = { id: "broken", onDisk: { "qwen2.5-coder:7b": 5 }, ollamaDown: true };
  expect(resolve([down], "claude-sonnet-4-5")).toEqual({ model: "qwen2.5-coder:7b", reason: "auto-routed (coding tier) to the best model of a node that cannot serve now" });
  expect(modelFor([{ id: "leaving", loaded: { "qwen2.5-coder:7b": 5 }, draining: true }], "claude-sonnet-4-5")).toBeNull();
});

test("with anthropic.autoRoute off, an id that is no local model resolves to nothing", () => {
  expect(resolve([studio], "claude-sonnet-4-5", { config: { anthropic: { autoRoute: false } } })).toBeNull();
  expect(resolve([studio], "qwen2.5:7b", { config: { anthropic: { autoRoute: false } } })?.model).toBe("qwen2.5:7b");
});

test("a client key's list bounds auto-routing: the best model it may be served, loaded first, else on disk, else nothing", () => {
  expect(modelFor([studio], "claude-sonnet-4-5", { allowed: /^qwen2\.5-coder:7b$/ })).toBe("qwen2.5-coder:7b");
  expect(modelFor([studio], "claude-opus-4-1", { allowed: /^llama/ })).toBe("llama3.2:3b");
  const mixed = { id: "n", loaded: { "qwen3:32b": 20 }, onDisk: { "qwen2.5-coder:7b": 5 } };
  expect(resolve([mixed], "claude-sonnet-4-5", { allowed: /coder/ })).toEqual({ model: "qwen2.5-coder:7b", reason: "auto-routed (coding tier) to the best model on disk; none was loaded" });
  expect(resolve([studio], "claude-sonnet-4-5", { allowed: /^phi/ })).toBeNull();
});
