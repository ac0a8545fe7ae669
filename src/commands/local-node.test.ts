import { expect, test } from "bun:test";
import { parseConfig } from "../config/load.ts";
import { localNodeId } from "./local-node.ts";

const nodes = (...list: object[]) => parseConfig({ nodes: list }).nodes;

test("the local agent takes the id of the entry for its own Ollama, on any loopback spelling", () => {
  const init = nodes({ id: "this-mac", ollama: "http://127.0.0.1:11434" });
  expect(localNodeId(init, "laptop", "http://127.0.0.1:11434")).toBe("this-mac");
  expect(localNodeId(init, "laptop", "http://localhost:11434/")).toBe("this-mac");
  expect(localNodeId(init, "laptop", "http://[::1]:11434")).toBe("this-mac");
});

test("its own entry wins; another port or another machine is another node", () => {
  const two = nodes({ id: "this-mac", ollama: "http://127.0.0.1:11434" }, { id: "laptop" });
  expect(localNodeId(two, "laptop", "http://127.0.0.1:11434")).toBe("laptop");
  const other = nodes({ id: "studio", ollama: "http://10.0.0.2:11434" }, { id: "spare", ollama: "http://127.0.0.1:11500" });
  expect(localNodeId(other, "laptop", "http://127.0.0.1:11434")).toBe("laptop");
  expect(localNodeId([], "laptop", "http://127.0.0.1:11434")).toBe("laptop");
});
