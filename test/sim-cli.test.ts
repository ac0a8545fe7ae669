// `herd sim`: the newcomer's demo fleet, from the command line.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { ROOT, eventually, getJson, herd, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

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

  test("each simulated Mac is reported by the real node agent (memory, CPU, disk, thermal), so the Recommendations page has a mix for every node", async () => {
    const dir = tmpDir();
    const sim = spawnHerd(["sim", "--nodes", "3", "--base-port", "0", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir });
    const [, routerUrl] = await sim.waitFor(/try: curl (http:\/\/[\d.]+:\d+)\/api\/chat/);
    expect(sim.output()).toMatch(/node sim-studio: Ollama at http:\/\/127\.0\.0\.1:\d+: 8 model\(s\) on disk, 3 loaded/);
    const nodes = (await getJson(`${routerUrl}/fleet/status`)).nodes;
    expect(nodes.map((n: any) => [n.node_id, n.source, n.memory?.total_gb, n.hardware?.chip, n.thermal, n.cpu !== null, n.disk_volumes?.length])).toEqual([
      ["sim-studio", "agent", 192, "Apple M2 Ultra", { state: "nominal" }, true, 1],
      ["sim-mini", "agent", 32, "Apple M4 Pro", { state: "nominal" }, true, 1],
      ["sim-air", "agent", 16, "Apple M3", { state: "nominal" }, true, 1],
    ]);
    const mix = await getJson(`${routerUrl}/dashboard/api/recommendations`);
    expect(mix.nodes.map((n: any) => [n.node_id, n.total_ram_gb, n.note ?? null, n.recommendations.length > 0])).toEqual([
      ["sim-studio", 192, null, true],
      ["sim-mini", 32, null, true],
      ["sim-air", 16, null, true],
    ]);
    expect(mix.uncovered_categories).toEqual([]);
    expect(mix.fleet_summary).toStartWith("3 node(s), 240GB total RAM, ");
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

describe("herd sim --mlx --mlx-lm-version", () => {
  test("the simulated mlx_lm.server behaves as the release asked for (and its agent serves it all the same); one herd does not simulate is a usage error", async () => {
    const dir = tmpDir();
    const sim = spawnHerd(["sim", "--nodes", "1", "--base-port", "0", "--mlx", "--mlx-lm-version", "0.31.2", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir });
    const [, routerUrl, model] = await sim.waitFor(/MLX: curl (http:\/\/[\d.]+:\d+)\/api\/chat -d '\{"model":"(mlx:[^"]+)"/);
    await sim.waitFor(/started \(pid \d+\): \S+ \S+ sim-mlx-server --mlx-lm-version 0\.31\.2 --model/);
    const answer = await eventually(async () => {
      const res = await fetch(`${routerUrl}/api/chat`, { method: "POST", body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }], stream: false }) });
      return res.status === 200 ? ((await res.json()) as any) : null;
    }, 20000, "the MLX server answering");
    expect(answer.done).toBe(true);
    expect(await sim.stop()).toBe(0);
    const unknown = await herd(["sim", "--mlx", "--mlx-lm-version", "0.28.3"], { timeoutMs: 5000 });
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringContaining('herd simulates mlx-lm 0.31.2 and 0.32.0, not "0.28.3"') });
  }, 30000);
});

// The simulated mlx_lm.server as a process: a stock mlx-lm's command line, as argparse reads it
// (test/fixtures/mlx-lm holds what Python's argparse printed for the same options).
describe("herd sim-mlx-server", () => {
  const fixture = (name: string) => readFileSync(join(ROOT, "test/fixtures/mlx-lm", name), "utf8");

  test("--help lists mlx_lm.server 0.32.0's options as argparse prints them", async () => {
    const r = await herd(["sim-mlx-server", "--help"], { timeoutMs: 5000 });
    expect(r).toMatchObject({ code: 0, stdout: fixture("help-0.32.0.txt") });
  });

  test("a flag stock mlx_lm.server lacks is argparse's usage error, exit 2: --kv-bits never existed", async () => {
    const r = await herd(["sim-mlx-server", "--model", "m", "--port", "0", "--kv-bits", "8"], { timeoutMs: 5000 });
    expect(r).toMatchObject({ code: 2, stderr: fixture("unrecognized-kv-bits.txt") });
    const typo = await herd(["sim-mlx-server", "--model", "m", "--port", "zero"], { timeoutMs: 5000 });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toEndWith("\nmlx_lm.server: error: argument --port: invalid int value: 'zero'\n");
  });

  const completion = (port: string, signal?: AbortSignal) =>
    fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }), signal });

  test("0.32.0 binds, then loads: it answers /v1/models at once, and a completion once the model is in, cut at --max-tokens when it sets no cap", async () => {
    const server = spawnHerd(["sim-mlx-server", "--model", "mlx-community/Qwen3-8B-4bit", "--port", "0", "--max-tokens", "3"]);
    const [, port] = await server.waitFor(/Starting httpd at 127\.0\.0\.1 on port (\d+)\.\.\./);
    expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(200);
    const answer = await completion(port!);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as any;
    expect(body.choices[0].finish_reason).toBe("length");
    expect(body.usage.completion_tokens).toBe(3);
    await server.stop();
  });

  test("0.32.0: a model that cannot load (a path that is not there is taken for a repo id) kills the loading thread; the server still answers /health and /v1/models, a completion never", async () => {
    const server = spawnHerd(["sim-mlx-server", "--model", "/no/such/model", "--port", "0"]);
    const [, port] = await server.waitFor(/Starting httpd at 127\.0\.0\.1 on port (\d+)\.\.\./);
    await server.waitFor(/^Exception in thread Thread-1 \(_generate\):\nTraceback \(most recent call last\):\n( {2}File .*\n)+huggingface_hub\.errors\.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace\/repo_name': '\/no\/such\/model'\./m);
    expect(await (await fetch(`http://127.0.0.1:${port}/health`)).text()).toBe(`{"status": "ok"}`);
    expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(200);
    const never = await completion(port!, AbortSignal.timeout(1500)).catch((e: Error) => e);
    expect((never as Error).name).toBe("TimeoutError");
    expect(server.proc.exitCode).toBeNull();
    await server.stop();
  });

  test("0.31.2 loads before it binds: the same model ends it, exit 1 with the traceback, never having served", async () => {
    const r = await herd(["sim-mlx-server", "--mlx-lm-version", "0.31.2", "--model", "/no/such/model", "--port", "0"], { timeoutMs: 10000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Traceback \(most recent call last\):\n( {2}File .*\n)+huggingface_hub\.errors\.HFValidationError: Repo id must be in the form/);
    expect(r.stderr).not.toContain("Starting httpd");
  });

  test("herd's own first argument picks the mlx-lm release to behave as; one it does not simulate is refused", async () => {
    const older = await herd(["sim-mlx-server", "--mlx-lm-version", "0.31.2", "--help"], { timeoutMs: 5000 });
    expect(older).toMatchObject({ code: 0, stdout: fixture("help-0.32.0.txt") }); // 0.31.2 has the same options
    const unknown = await herd(["sim-mlx-server", "--mlx-lm-version", "0.28.0", "--model", "m"], { timeoutMs: 5000 });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("herd simulates mlx-lm 0.31.2 and 0.32.0");
  });
});
