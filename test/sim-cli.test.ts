// `herd sim`: the newcomer's demo fleet, from the command line.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { getJson, herd, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

describe("herd sim", () => {
  test("brings up simulated nodes behind a router; a first chat through the router answers", async () => {
    const dir = tmpDir();
    const sim = spawnHerd(["sim", "--nodes", "3", "--base-port", "0", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir });
    const [, routerUrl] = await sim.waitFor(/try: curl (http:\/\/[\d.]+:\d+)\/api\/chat/);
    const nodes = [...sim.output().matchAll(/simulated node (\S+): (http:\/\/\S+)/g)].map((m) => ({ id: m[1], url: m[2] }));
    expect(nodes.map((n) => n.id)).toEqual(["sim-studio", "sim-mini", "sim-air"]);

    const status = await getJson(`${routerUrl}/fleet/status`);
    expect(status.fleet).toMatchObject({ nodes_total: 3, nodes_online: 3 });
    expect(status.nodes.map((n: any) => n.ollama_url).sort()).toEqual(nodes.map((n) => n.url).sort());

    const reply = await new Ollama({ host: routerUrl! }).chat({ model: "llama3.2:3b", messages: [{ role: "user", content: "hello" }] });
    expect(reply.message.content.length).toBeGreaterThan(0);
    expect(reply.done).toBe(true);

    // Each simulated node is a faithful Ollama on its own: the OpenAI client works against one directly.
    const openai = new OpenAI({ baseURL: `${nodes[0]!.url}/v1`, apiKey: "unused" });
    const completion = await openai.chat.completions.create({ model: "qwen2.5-coder:32b", messages: [{ role: "user", content: "hi" }] });
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(await sim.stop()).toBe(0);
  });

  test("--no-router starts only the nodes and prints their ports", async () => {
    const sim = spawnHerd(["sim", "--nodes", "2", "--base-port", "0", "--no-router"]);
    await sim.waitFor(/simulated node sim-mini: http:\/\/127\.0\.0\.1:\d+/);
    const [, url] = sim.output().match(/simulated node sim-studio: (\S+)/)!;
    expect((await getJson(`${url}/api/version`)).version).toMatch(/^\d+\.\d+\.\d+$/);
    await Bun.sleep(200);
    expect(sim.output()).not.toContain("serving on");
    expect(await sim.stop()).toBe(0);
  });

  test("--ollama-version picks the release the nodes behave as; the router knows each node's memory, so the context its Ollama picks", async () => {
    const dir = tmpDir();
    const sim = spawnHerd(["sim", "--nodes", "2", "--base-port", "0", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--ollama-version", "0.13.5"], { cwd: dir });
    const [, routerUrl] = await sim.waitFor(/try: curl (http:\/\/[\d.]+:\d+)\/api\/chat/);
    const [, url] = sim.output().match(/simulated node sim-studio: (\S+)/)!;
    expect((await getJson(`${url}/api/version`)).version).toBe("0.13.5");
    const nodes = (await getJson(`${routerUrl}/fleet/status`)).nodes;
    // Before 0.15.5 every model loads at 4096 tokens, whatever the memory.
    expect(nodes.map((n: any) => [n.node_id, n.capacity.default_context, n.capacity.sources.default_context])).toEqual([["sim-studio", 4096, "release"], ["sim-mini", 4096, "release"]]);
    expect(await sim.stop()).toBe(0);
    const bad = await herd(["sim", "--ollama-version", "latest"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--ollama-version: expected an Ollama release such as 0.33.0, got "latest"');
  });

  test("keeps its store apart from the real one unless told; with no config, ~ is $HOME, not a folder in the cwd", async () => {
    const home = tmpDir();
    const cwd = tmpDir();
    const env = { HOME: home };
    const sim = spawnHerd(["sim", "--nodes", "1", "--base-port", "0", "--port", "0", "--host", "127.0.0.1"], { cwd, env });
    await sim.waitFor(/try: curl/);
    expect(sim.output()).toContain(`store: ${join(home, ".herd", "sim", "herd.sqlite")}\n`);
    expect(await sim.stop()).toBe(0);
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1"], { cwd, env });
    await router.waitFor(/store: /);
    expect(router.output()).toContain(`store: ${join(home, ".herd", "herd.sqlite")}\n`);
    expect(await router.stop()).toBe(0);
    expect(existsSync(join(home, ".herd", "herd.sqlite"))).toBe(true);
    expect(existsSync(join(cwd, "~"))).toBe(false);
    // An env value with ~ is expanded as well.
    const fromEnv = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1"], { cwd, env: { ...env, HERD_DATA_DIR: "~/elsewhere" } });
    await fromEnv.waitFor(/store: /);
    expect(fromEnv.output()).toContain(`store: ${join(home, "elsewhere", "herd.sqlite")}\n`);
    await fromEnv.stop();
    expect(existsSync(join(cwd, "~"))).toBe(false);
  });
});
