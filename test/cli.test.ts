// The CLI as a user meets it: help, versions, usage errors, and the first start.
import { describe, expect, test } from "bun:test";
import { hostname, networkInterfaces } from "node:os";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, herd, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

describe("herd CLI", () => {
  test("version and --help for every command", async () => {
    expect((await herd(["version"])).stdout.trim()).toBe(pkg.version);
    expect(await herd(["--version"])).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    expect(await herd(["-v"])).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    const top = await herd(["--help"]);
    expect(top.code).toBe(0);
    for (const cmd of ["serve", "node", "sim", "init", "check-config", "version"]) {
      expect(top.stdout).toContain(cmd);
      const r = await herd([cmd, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: herd ${cmd}`);
    }
    expect((await herd(["node", "-h"])).stdout).toContain("--router URL");
  });

  test("usage errors say what is wrong in one line and exit 2", async () => {
    const cases: [string[], string][] = [
      [["frobnicate"], `unknown command "frobnicate"`],
      [["serve", "--bogus"], "--bogus"],
      [["serve", "--port", "http"], `--port: expected a port number 0-65535, got "http"`],
      [["node", "--port", "1"], "herd node does not take --port"],
      [["sim", "--nodes", "0"], `--nodes: expected a whole number 1-64, got "0"`],
      [["check-config"], "check-config needs a FILE"],
      [["node", "--router", "localhost:11435"], `--router: expected a URL such as http://10.0.0.2:11435, got "localhost:11435"`],
      [["node", "--ollama", "127.0.0.1"], `--ollama: expected a URL`],
      [["--ollama", "ftp://x"], `--ollama: expected a URL`],
      [["init", join(tmpDir(), "missing")], "is not a directory; create it first"],
      [["serve", "extra"], `herd serve does not take "extra"`],
      [["stray"], `unknown command "stray"`],
      [["init", ".", "two"], `herd init does not take "two"`],
      [["node", "--node-id", "bad/id"], `--node-id: expected letters, digits, '.', '_' or '-', got "bad/id"`],
      [["serve", "--port", "-1"], "Option '--port' argument is ambiguous"],
      [["version", "now"], `herd version does not take "now"`],
    ];
    for (const [args, message] of cases) {
      const r = await herd(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    const env = await herd(["node"], { env: { HERD_ROUTER: "10.0.0.1:11435" } });
    expect(env).toMatchObject({ code: 2, stderr: expect.stringContaining(`HERD_ROUTER: expected a URL`) });
  }, 30_000);

  test("with no config and no Ollama, `herd` starts, says what it found, serves, and stops cleanly on SIGTERM", async () => {
    const dir = tmpDir();
    const router = await startRouterProcess(["--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--ollama", "http://127.0.0.1:9"], { cwd: dir });
    await router.waitFor(/local Ollama at http:\/\/127\.0\.0\.1:9 unreachable; run `herd sim` or edit herd\.config\.ts/);
    expect(router.output()).toContain(`no herd.config.* in ${dir}; running on defaults`);
    // Alive (200) but not able to serve: /healthz, the Health page and a chat's 404 say why and what to run.
    const healthz = await fetch(`${router.url}/healthz`);
    expect(healthz.status).toBe(200);
    const health: any = await healthz.json();
    expect(health).toMatchObject({ status: "degraded", version: pkg.version, config_hash: "defaults" });
    const self_ = hostname().replace(/\.local$/, "");
    expect(health.reasons).toEqual([
      "no online node reaches its Ollama (nor runs a healthy MLX server)",
      `${self_}: Ollama at http://127.0.0.1:9 does not answer (connection refused); start Ollama with \`ollama serve\` (on a Mac the router reaches over the network: \`OLLAMA_HOST=0.0.0.0 ollama serve\`)`,
    ]);
    const check = (await getJson(`${router.url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === "ollama_unreachable");
    expect(check).toMatchObject({ severity: "critical", nodes: [self_], finding: `no node reaches its Ollama: ${self_}: Ollama at http://127.0.0.1:9 does not answer (connection refused)` });
    expect(check.recommendation).toContain("`ollama serve`");
    const chat = await fetch(`${router.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }] }) });
    expect(chat.status).toBe(404);
    expect(((await chat.json()) as any).error).toStartWith(
      `model "llama3.2:3b" not found on any node; no node reports any model (${self_}: Ollama at http://127.0.0.1:9 does not answer (connection refused)): start Ollama with \`ollama serve\` (on a Mac the router reaches over the network: \`OLLAMA_HOST=0.0.0.0 ollama serve\`)`,
    );
    const status = await getJson(`${router.url}/fleet/status`);
    const self = status.nodes.find((n: any) => n.node_id === hostname().replace(/\.local$/, ""));
    expect(self).toMatchObject({ status: "online", source: "agent", declared: false });
    expect(self.ollama).toMatchObject({ reachable: false, error: "connection refused" });
    expect(self.hardware.memory_total_gb).toBeGreaterThan(0);
    // No Ollama answers: no fleet version to give a client's version check (herd's own is in every answer's header).
    const version = await fetch(`${router.url}/api/version`);
    expect(version.status).toBe(503);
    expect(await version.json()).toEqual({ error: "no online node reports an Ollama version: none of the 1 online node(s) reaches its Ollama" });
    for (const res of [version, await fetch(`${router.url}/healthz`), await fetch(`${router.url}/no/such/route`)]) expect(res.headers.get("x-herd-version")).toBe(pkg.version);
    expect(await router.stop("SIGTERM")).toBe(0);
  });

  test("`npm start`'s command runs the repo's herd.config.ts; env overrides port and data dir", async () => {
    const dir = tmpDir();
    const router = await startRouterProcess(["--ollama", "http://127.0.0.1:9"], {
      env: { HERD_PORT: "0", HERD_HOST: "127.0.0.1", HERD_DATA_DIR: join(dir, "data"), HERD_NODE_ID: "laptop" },
    });
    const status = await getJson(`${router.url}/fleet/status`);
    expect(status.config.path).toMatch(/\/herd\.config\.ts$/);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.some((n: any) => n.node_id === "laptop"), 3000, "the local agent");
    expect(await Bun.file(join(dir, "data", "herd.sqlite")).exists()).toBe(true);
    await router.stop();
  });

  test("a port in use and an unusable data dir each get one clear line and exit 1", async () => {
    const dir = tmpDir();
    const first = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "a")], { cwd: dir });
    const port = new URL(first.url).port;
    const second = await herd(["serve", "--port", port, "--host", "127.0.0.1", "--data-dir", join(dir, "b")], { cwd: dir });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(second.stderr).not.toMatch(/^\s+at /m);

    await Bun.write(join(dir, "file"), "not a directory");
    const badDir = await herd(["serve", "--port", "0", "--data-dir", join(dir, "file", "sub")], { cwd: dir });
    expect(badDir.code).toBe(1);
    expect(badDir.stderr).toContain("cannot open the store in");
    expect(badDir.stderr).toContain("--data-dir");
    await first.stop();
  });

  test("`herd init` + plain `herd` is one node: the local agent reports as the entry for its own Ollama", async () => {
    const node = await startSimOllama({ id: "mine", port: 0, models: ["llama3.2:3b", "qwen3:8b"], loaded: [], memoryGb: 16 });
    const dir = tmpDir();
    expect((await herd(["init", dir])).code).toBe(0);
    // The starter entry, for this Mac's Ollama (a simulated one on another port here).
    const config = join(dir, "herd.config.ts");
    writeFileSync(config, readFileSync(config, "utf8").replace("http://127.0.0.1:11434", node.url));
    const router = await startRouterProcess(["--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--ollama", node.url.replace("127.0.0.1", "localhost")], { cwd: dir });
    await router.waitFor(/local agent reports as node "this-mac", the config's entry for the Ollama at/);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "this-mac")?.source === "agent", 3000, "this-mac from its agent");
    const status = await getJson(`${router.url}/fleet/status`);
    expect(status.nodes.map((n: any) => n.node_id)).toEqual(["this-mac"]);
    const tags = await getJson(`${router.url}/api/tags`);
    expect(tags.models.map((m: any) => m.name).sort()).toEqual(["llama3.2:3b", "qwen3:8b"]);
    expect(await router.stop()).toBe(0);
    await node.stop();
  });

  test("a Mac its fleet config names by its LAN address or host name is one node too: plain `herd` there reports as that entry", async () => {
    // This machine's own non-loopback address and host name, as a config in git would name it.
    const lan = Object.values(networkInterfaces()).flat().find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    const node = await startSimOllama({ id: "mine", host: "0.0.0.0", port: 0, models: ["llama3.2:3b"], loaded: ["llama3.2:3b"], memoryGb: 16 });
    for (const host of [lan, hostname()].filter(Boolean)) {
      const dir = tmpDir();
      writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "studio", ollama: "http://${host}:${node.port}" }] };\n`);
      const router = await startRouterProcess(["--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--node-id", "studio-mac", "--ollama", `http://127.0.0.1:${node.port}`], { cwd: dir });
      await router.waitFor(/local agent reports as node "studio", the config's entry for the Ollama at/);
      await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "studio")?.source === "agent", 3000, "studio from its agent");
      expect({ host, nodes: (await getJson(`${router.url}/fleet/status`)).nodes.map((n: any) => n.node_id) }).toEqual({ host, nodes: ["studio"] });
      expect((await getJson(`${router.url}/api/ps`)).models.map((m: any) => m.name)).toEqual(["llama3.2:3b"]);
      expect(await router.stop()).toBe(0);
    }
    // The same on another Mac of the fleet: `herd node` there reports as the entry that names its Ollama.
    const dir = tmpDir();
    // Its credential comes from its own entry, found by its Ollama's address (a heartbeat without one proves nothing).
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "studio", ollama: "http://${lan ?? hostname()}:${node.port}", token: "studio-node-credential-0123456789" }], heartbeat: { intervalMs: 200 } };\n`);
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir });
    const agent = spawnHerd(["node", "--router", router.url, "--node-id", "studio-mac", "--ollama", `http://127.0.0.1:${node.port}`], { cwd: dir });
    await agent.waitFor(/node agent "studio" reporting/);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "studio")?.source === "agent", 3000, "studio from its agent");
    expect(await agent.stop()).toBe(0);
    expect(await router.stop()).toBe(0);
    await node.stop();
  });

  test("by default herd listens on this machine only, says so and how to open it, and warns of declared agents that cannot reach it", async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [{ id: "mini" }, { id: "studio", ollama: "http://127.0.0.1:9" }] };\n`);
    const router = await startRouterProcess(["serve", "--port", "0", "--data-dir", join(dir, "data")], { cwd: dir });
    // The lines after "serving on" may come in a later read of the pipe: the announcement ends with the store's.
    await eventually(async () => router.output().includes("store: "), 5000, "the start's announcement");
    expect(router.output()).toMatch(/listening on 127\.0\.0\.1:\d+\)/);
    expect(router.output()).toContain('listening on this machine only: to serve other Macs and their agents, set server.host: "0.0.0.0" (or --host 0.0.0.0), which opens herd to everyone on the network until auth is set');
    expect(router.output()).toContain("node(s) mini report by their agent's heartbeat, which cannot reach a router listening on 127.0.0.1: set server.host");
    const lan = Object.values(networkInterfaces()).flat().find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    if (lan) expect(await fetch(`http://${lan}:${new URL(router.url).port}/healthz`).then(() => "answered", () => "refused")).toBe("refused");
    expect(await router.stop()).toBe(0);
  });

  test("an invalid config at start exits 1 with the problems", async () => {
    const dir = tmpDir();
    await Bun.write(join(dir, "herd.config.json"), JSON.stringify({ server: { port: "x" } }));
    const r = await herd(["serve"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`server.port: expected a number, got "x"`);
  });
});

describe("herd node --enroll", () => {
  test("makes the node a credential in a 0600 file (kept on a second run), prints its config entry, and the router then takes the node's heartbeats with it only", async () => {
    const dir = tmpDir();
    const file = join(dir, "keys", "mini.token");
    const first = await herd(["node", "--enroll", "--node-id", "mini", "--token-file", file]);
    expect(first.code).toBe(0);
    const credential = readFileSync(file, "utf8").trim();
    expect(credential).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.stdout).toContain(`node credential for "mini" made in ${file}`);
    expect(first.stdout).toContain(`{ id: "mini", token: { file: "${file}" } }`);
    expect(first.stdout).toContain(credential);
    const again = await herd(["node", "--enroll", "--node-id", "mini", "--token-file", file]);
    expect(again.stdout).toContain(`kept in ${file}`);
    expect(readFileSync(file, "utf8").trim()).toBe(credential);
    expect((await herd(["node", "--help"])).stdout).toContain("--enroll");

    // The entry it printed, in a router's config.
    const config = join(dir, "herd.config.ts");
    writeFileSync(config, `export default { nodes: [{ id: "mini", token: { file: "${file}" } }] };\n`);
    const router = await startRouterProcess(["serve", "--config", config, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    const beat = (token: string | null) =>
      fetch(`${router.url}/heartbeat`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ node_id: "mini", ollama_url: "http://10.9.8.7:11500" }),
      });
    expect((await beat(null)).status).toBe(401);
    expect((await beat(credential)).status).toBe(200);
    // A proven heartbeat says where the node's Ollama is.
    expect((await getJson(`${router.url}/fleet/status`)).nodes[0].ollama_url).toBe("http://10.9.8.7:11500");
    expect(router.output()).not.toContain("open mode");
    await router.stop();
  });
});
