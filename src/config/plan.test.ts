import { expect, test } from "bun:test";
import { parseConfig } from "./load.ts";
import { configChanges, effectiveView } from "./plan.ts";

const view = (raw: unknown) => effectiveView(parseConfig(raw));

test("the same config plans no change; a relative dataDir and the listen address are not compared", () => {
  const config = { nodes: [{ id: "a", ollama: "http://10.0.0.2:11434" }], modelMap: { fast: "llama3.2:3b" } };
  expect(configChanges(view(config), view({ ...config, server: { port: 1, host: "127.0.0.1", dataDir: "elsewhere" } }))).toEqual([]);
});

test("nodes and client keys by name, every other setting by its path; a secret only as set, never its value", () => {
  const running = view({
    nodes: [{ id: "a", ollama: "http://10.0.0.2:11434" }, { id: "gone" }],
    auth: { clients: [{ name: "alice", key: "alice-secret-1" }, { name: "bob", key: "bob-secret-1" }] },
    scoring: { weights: { hot: 50 } },
  });
  const proposed = view({
    nodes: [{ id: "a", ollama: "http://10.0.0.9:11434", parallel: 2 }, { id: "mini" }],
    auth: { adminToken: "admin-secret-1", clients: [{ name: "alice", key: "alice-secret-2", maxInFlight: 3 }, { name: "carol", key: "carol-secret-1" }] },
    pins: { mini: ["llama3"] },
    modelMap: { fast: "qwen3" },
    scoring: { weights: { hot: 60 } },
  });
  const changes = configChanges(running, proposed);
  expect(changes).toEqual([
    { kind: "~", what: "nodes: a", detail: "ollama, parallel" },
    { kind: "+", what: "nodes: mini", detail: "" },
    { kind: "-", what: "nodes: gone", detail: "" },
    { kind: "~", what: "auth.clients: alice", detail: "maxInFlight" },
    { kind: "+", what: "auth.clients: carol", detail: "" },
    { kind: "-", what: "auth.clients: bob", detail: "" },
    { kind: "+", what: "pins.mini", detail: `["llama3"]` },
    { kind: "+", what: "modelMap.fast", detail: `"qwen3"` },
    { kind: "~", what: "scoring.weights.hot", detail: "50 → 60" },
    { kind: "+", what: "auth.adminToken", detail: `"••••"` },
  ]);
  expect(JSON.stringify(changes)).not.toContain("secret-");
});

test("a node's address is shown without its user:password@", () => {
  const shown = view({ nodes: [{ id: "a", ollama: "http://herd:pa55word@10.0.0.2:11434" }] });
  expect(JSON.stringify(shown)).not.toContain("pa55word");
  expect((shown.nodes as { ollama: string }[])[0]!.ollama).toBe("http://10.0.0.2:11434");
});
