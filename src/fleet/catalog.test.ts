import { expect, test } from "bun:test";
import { mlxModelOf } from "./catalog.ts";
import { Registry } from "./registry.ts";
import { quietly, testConfig, testFleet } from "./test-fixtures.ts";

test("a plain name an Ollama holds is that Ollama model, whichever node's MLX server runs the name; mlx: names the server's", () => {
  const { registry } = testFleet([
    { id: "studio", loaded: { "llama3.2:3b": 2 } },
    { id: "lab", mlx: ["llama3.2:3b", "org/lab-model"] },
  ]);
  expect(mlxModelOf(registry, "llama3.2:3b")).toBeNull();
  expect(mlxModelOf(registry, "mlx:llama3.2:3b")).toBe("llama3.2:3b");
  expect(mlxModelOf(registry, "org/lab-model")).toBe("org/lab-model");
  expect(mlxModelOf(registry, "qwen3:8b")).toBeNull();
});

test("an Ollama's list sent without a credential does not take an MLX server's name", () => {
  const registry = new Registry(testConfig({ nodes: [{ id: "mini" }, { id: "lab", mlx: [{ model: "org/lab-model", port: 8080 }] }] }));
  quietly(() => {
    registry.heartbeat({ node_id: "lab", mlx_servers: [{ port: 8080, model: "org/lab-model", status: "healthy", status_reason: "", kv_bits: 0, model_size_gb: 1, last_ok_ts: null, context_length: null }] }, null, true);
    registry.heartbeat({ node_id: "mini", ollama: { reachable: true, error: null, version: null, requests_active: 0, models_loaded: [], models_available: [{ name: "org/lab-model" }] } }, "10.0.0.3", false);
  });
  expect(mlxModelOf(registry, "org/lab-model")).toBe("org/lab-model");
});
