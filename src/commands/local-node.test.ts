import { expect, test } from "bun:test";
import { parseConfig } from "../config/load.ts";
import { localNodeId, type ThisMachine } from "./local-node.ts";

const nodes = (...list: object[]) => parseConfig({ nodes: list }).nodes;
/** A Mac named "studio", at 10.0.0.2 on the LAN; "studio.lan" resolves to it, "nas.lan" to another machine. */
const studio: ThisMachine = {
  addresses: new Set(["127.0.0.1", "::1", "10.0.0.2", "fe80::1"]),
  names: new Set(["localhost", "studio", "studio.local"]),
  resolve: async (name) => ({ "studio.lan": ["10.0.0.2"], "nas.lan": ["10.0.0.9"] })[name] ?? Promise.reject(new Error("ENOTFOUND")),
};

test("the local agent takes the id of the entry for its own Ollama, on any loopback spelling", async () => {
  const init = nodes({ id: "this-mac", ollama: "http://127.0.0.1:11434" });
  for (const url of ["http://127.0.0.1:11434", "http://localhost:11434/", "http://[::1]:11434"]) expect(await localNodeId(init, "laptop", url, studio)).toBe("this-mac");
});

test("and of an entry that names this Mac by a LAN address, its host name or a name that resolves to it", async () => {
  for (const ollama of ["http://10.0.0.2:11434", "http://STUDIO.local:11434", "http://studio:11434", "http://studio.lan:11434", "http://[fe80::1]:11434"]) {
    expect(await localNodeId(nodes({ id: "studio", ollama }), "studio-mac", "http://127.0.0.1:11434", studio)).toBe("studio");
  }
});

test("its own entry wins; another port, another machine or a name that does not resolve is another node", async () => {
  const two = nodes({ id: "this-mac", ollama: "http://127.0.0.1:11434" }, { id: "laptop" });
  expect(await localNodeId(two, "laptop", "http://127.0.0.1:11434", studio)).toBe("laptop");
  const other = nodes(
    { id: "mini", ollama: "http://10.0.0.3:11434" },
    { id: "nas", ollama: "http://nas.lan:11434" },
    { id: "ghost", ollama: "http://ghost.lan:11434" },
    { id: "spare", ollama: "http://127.0.0.1:11500" },
  );
  expect(await localNodeId(other, "laptop", "http://127.0.0.1:11434", studio)).toBe("laptop");
  expect(await localNodeId([], "laptop", "http://127.0.0.1:11434", studio)).toBe("laptop");
});
