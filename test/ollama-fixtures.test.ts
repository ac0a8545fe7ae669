// herd's reading of a node's Ollama, on Ollama's own documented answers (test/fixtures/ollama, with their source):
// what the node agent and the router's poll make of /api/tags and /api/ps.
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { probeOllama } from "../src/backends/ollama.ts";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "fixtures", "ollama", name), "utf8");
const answers: Record<string, string> = { "/api/tags": fixture("tags.json"), "/api/ps": fixture("ps.json"), "/api/version": '{"version":"0.33.0"}' };
const ollama = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(answers[new URL(req.url).pathname] ?? "404 page not found", { status: answers[new URL(req.url).pathname] ? 200 : 404, headers: { "content-type": "application/json; charset=utf-8" } }) });
afterAll(() => ollama.stop(true));

test("the documented /api/tags and /api/ps read whole: every model, its size in GB from `size`, its fields kept for clients", async () => {
  const section = await probeOllama(ollama.url.href, 1000, { bytes: 2 ** 20, setting: "server.maxNodeAnswerMb" });
  expect(section).toMatchObject({ reachable: true, error: null, version: "0.33.0" });
  expect(section.models_available.map((m) => [m.name, m.size])).toEqual([["deepseek-r1:latest", 4683075271], ["llama3.2:latest", 2019393189]]);
  expect(section.models_available[1]!.details).toEqual(JSON.parse(fixture("tags.json")).models[1].details);
  const [mistral] = section.models_loaded;
  expect(mistral).toMatchObject({ name: "mistral:latest", size: 5137025024, size_vram: 5137025024, expires_at: "2024-06-04T14:38:31.83753-07:00", size_gb: 4.8 });
});
