// The real openai-node client (the `openai` package) against a real router and a simulated node
// it polls, on the routes of OpenAI's API that scripts and older tools call beside chat: every
// answer in the shapes the client's types declare. Tests share the fleet, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

let node: SimNode;
let url: string;
let openai: OpenAI;

afterAll(async () => {
  await node?.stop();
  await cleanupFile();
});

beforeAll(async () => {
  node = await startSimOllama({ id: "a", models: ["llama3.2:3b", "qwen3:8b", "nomic-embed-text"], loaded: ["llama3.2:3b"] });
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { nodes: [{ id: "a", ollama: "${node.url}" }], heartbeat: { intervalMs: 200 } };\n`);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  url = router.url;
  await eventually(async () => (await getJson(`${url}/fleet/status`)).nodes.some((n: any) => n.status === "online" && n.ollama?.reachable), 8000, "the node online");
  openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
});

describe("openai-node against the fleet", () => {
  test("models.retrieve(): the model as /v1/models lists it, its id as asked (no tag is :latest); an unknown one is a 404 model_not_found", async () => {
    const listed = (await openai.models.list()).data;
    const entry = (id: string) => listed.find((m) => m.id === id);
    expect(await openai.models.retrieve("llama3.2:3b")).toEqual(entry("llama3.2:3b")!);
    expect(await openai.models.retrieve("nomic-embed-text")).toEqual({ ...entry("nomic-embed-text:latest")!, id: "nomic-embed-text" });
    const missing = await openai.models.retrieve("no-such-model:1b").catch((e) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect({ status: missing.status, code: missing.code, message: missing.error.message }).toEqual({
      status: 404,
      code: "model_not_found",
      message: 'model "no-such-model:1b" not found on any node',
    });
  });
});
