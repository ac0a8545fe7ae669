// GitOps: a config kept in git, its imports, its identity on every node, and checks before it is applied.
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startSimOllama } from "../src/sim/index.ts";
import { VERSION } from "../src/version.ts";
import { eventually, freePorts, getJson, herd, onCleanup, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

// HerdConfig is only a type (herd.d.ts): erased, as Bun erases it, not an import to follow.
const MAIN = `import { HerdConfig } from "./herd";\nimport { nodes } from "./fleet/nodes.ts";\nexport default { nodes } satisfies HerdConfig;\n`;
const nodesTs = (ids: string[]) => `export const nodes = ${JSON.stringify(ids.map((id, i) => ({ id, ollama: `http://127.0.0.1:${i + 1}` })))};\n`;

function fleetDir(ids: string[]): { dir: string; file: string; nodesFile: string } {
  const dir = tmpDir();
  mkdirSync(join(dir, "fleet"));
  const file = join(dir, "herd.config.ts");
  const nodesFile = join(dir, "fleet", "nodes.ts");
  writeFileSync(file, MAIN);
  writeFileSync(nodesFile, nodesTs(ids));
  return { dir, file, nodesFile };
}

const hashOf = (stdout: string) => /hash ([0-9a-f]{12})/.exec(stdout)?.[1];

describe("a .ts config that imports another file", () => {
  test("the hash covers the imported file: two fleets that differ only there have different hashes", async () => {
    const one = fleetDir(["a"]);
    const two = fleetDir(["a", "b"]);
    const [r1, r2] = [await herd(["check-config", one.file]), await herd(["check-config", two.file])];
    expect(r1.code).toBe(0);
    expect(r2.stdout).toContain("2 node(s): a, b");
    expect(hashOf(r1.stdout)).not.toBe(hashOf(r2.stdout));
  });

  test("an edit to the imported file reloads the router: new nodes and a new hash", async () => {
    const { dir, file, nodesFile } = fleetDir(["a"]);
    const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    const status = () => getJson(`${router.url}/fleet/status`);
    const before = await status();
    expect(before.nodes.map((n: any) => n.node_id)).toEqual(["a"]);
    writeFileSync(nodesFile, nodesTs(["a", "b"]));
    const after = await eventually(async () => {
      const s = await status();
      return s.nodes.length === 2 && s;
    }, 3000, "node b from the imported file");
    expect(after.config.hash).not.toBe(before.config.hash);
    // And once more: the second edit is read too, not a module cached by the first reload.
    writeFileSync(nodesFile, nodesTs(["c"]));
    await eventually(async () => (await status()).nodes.map((n: any) => n.node_id).join() === "c", 3000, "node c alone");
  });
});

describe("config errors", () => {
  test("a TypeScript syntax error names file:line:column and the message, in the imported file too", async () => {
    const dir = tmpDir();
    const file = join(dir, "herd.config.ts");
    writeFileSync(file, `export default {\n  nodes: [\n    { id: "a" ,\n    { id: "b" }\n  ],\n};\n`);
    const r = await herd(["check-config", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}:4:5: Expected identifier but found "{"`);
    expect(r.stderr).not.toContain("errors building");

    const { file: main, nodesFile } = fleetDir(["a"]);
    writeFileSync(nodesFile, `export const nodes = [;\n`);
    const imported = await herd(["check-config", main]);
    expect(imported.code).toBe(1);
    expect(imported.stderr).toMatch(new RegExp(`${nodesFile.replaceAll(/[.]/g, "\\.")}:1:\\d+: `));
  });

  test("a syntax error saved while the router runs: line and column in the reload log, /fleet/status, Settings and Health", async () => {
    const { dir, file, nodesFile } = fleetDir(["a"]);
    const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    writeFileSync(nodesFile, `export const nodes = [\n  { id: "b" ,\n  { id: "c" },\n];\n`);
    const where = `${nodesFile}:3:3: Expected identifier but found "{"`;
    const status = await eventually(async () => (await getJson(`${router.url}/fleet/status`)).config.last_error, 3000, "the refused reload");
    expect(status.problems).toEqual([where]);
    await router.waitFor(new RegExp(`config not reloaded, keeping [0-9a-f]{12}: .*${nodesFile.replaceAll(".", "\\.")}:3:3`));
    expect((await getJson(`${router.url}/dashboard/api/settings`)).config_source.last_error.problems).toEqual([where]);
    const health = await getJson(`${router.url}/dashboard/api/health?refresh=1`);
    expect(JSON.stringify(health)).toContain(where.replaceAll('"', '\\"'));
    expect(JSON.stringify(health)).not.toContain("errors building");
  });

  test("one pass reports every problem once: shape errors with duplicate ids, pins on an undeclared node, an empty model map value", async () => {
    const file = join(tmpDir(), "herd.config.json");
    writeFileSync(
      file,
      JSON.stringify({
        nodes: [{ id: "studio", ollama: "nope", parallel: 0.5 }, { id: "studio" }],
        server: { port: -1.5 },
        pins: { studoi: ["llama3"], "*": ["nomic-embed-text"] },
        modelMap: { "gpt-4": "" },
      }),
    );
    const r = await herd(["check-config", file]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n").slice(1).map((l) => l.trim());
    expect(lines.sort()).toEqual(
      [
        `modelMap["gpt-4"]: expected a non-empty string, got an empty string`,
        `nodes[0].ollama: expected a URL like http://10.0.0.2:11434, got "nope"`,
        "nodes[0].parallel: expected a whole number, got 0.5",
        `nodes[1].id: "studio" is already used by nodes[0]; node ids must be unique`,
        `pins.studoi: no node "studoi" is declared in nodes; did you mean "studio"?`,
        "server.port: expected a whole number, got -1.5",
      ].sort(),
    );
  });
});

describe("herd check-config --no-secrets", () => {
  test("validates a config whose secrets are not on this machine, checking each reference's shape", async () => {
    const file = join(tmpDir(), "herd.config.ts");
    const body = (key: string) => `export default { auth: { adminToken: { env: "HERD_PLAN_ADMIN_UNSET" }, clients: [{ name: "ci", key: ${key} }] } };\n`;
    writeFileSync(file, body(`{ file: "./no-such.key" }`));
    const strict = await herd(["check-config", file]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("HERD_PLAN_ADMIN_UNSET is not set");
    const ci = await herd(["check-config", file, "--no-secrets"]);
    expect(ci.stderr).toBe("");
    expect(ci.code).toBe(0);
    expect(ci.stdout).toContain("secrets not read");
    writeFileSync(file, body(`{ env: "not a name" }`));
    const bad = await herd(["check-config", file, "--no-secrets"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`auth.clients[0].key.env: expected an environment variable name, got "not a name"`);
  });
});

describe("herd plan against a running router", () => {
  const ADMIN = "plan-admin-token-0123456789";
  const SECRET_KEY = "client-key-that-must-not-show-0123";
  const config = (nodes: string, extra = "") =>
    `export default { nodes: [${nodes}], auth: { adminToken: { env: "HERD_ADMIN_TOKEN" }, clients: [{ name: "ci", key: "${SECRET_KEY}" }] }, ${extra} };\n`;
  const a = `{ id: "a", ollama: "http://127.0.0.1:1" }`;

  test("no change exits 0, a change exits 2 and names it, an invalid file exits 1; the admin token is required", async () => {
    const dir = tmpDir();
    const running = join(dir, "herd.config.ts");
    writeFileSync(running, config(a, `modelMap: { fast: "llama3.2:3b" }`));
    const env = { HERD_ADMIN_TOKEN: ADMIN };
    const router = await startRouterProcess(["serve", "--config", running, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { env });

    const same = await herd(["plan", running, "--router", router.url], { env });
    expect(same.stderr).toBe("");
    expect(same.stdout).toContain("no changes");
    expect(same.code).toBe(0);

    const proposed = join(tmpDir(), "herd.config.ts");
    writeFileSync(
      proposed,
      config(`{ id: "a", ollama: "http://127.0.0.1:2" }, { id: "mini", ollama: "http://127.0.0.1:3" }`, `modelMap: { fast: "qwen3" }, pins: { mini: ["llama3"] }, scoring: { weights: { hot: 60 } }`).replace(`"ci"`, `"ci2"`),
    );
    // Without the router's secrets here: the plan reads none of them.
    const changed = await herd(["plan", proposed, "--router", router.url], { env });
    expect(changed.code).toBe(2);
    for (const line of ["~ nodes: a (ollama)", "+ nodes: mini", "+ auth.clients: ci2", "- auth.clients: ci", `~ modelMap.fast: "llama3.2:3b" → "qwen3"`, `+ pins.mini: ["llama3"]`, "~ scoring.weights.hot: 50 → 60"]) {
      expect(changed.stdout).toContain(line);
    }
    expect(changed.stdout).not.toContain(SECRET_KEY);
    expect(changed.stdout).not.toContain(ADMIN);

    const noToken = await herd(["plan", proposed, "--router", router.url], { env: { HERD_ADMIN_TOKEN: "" } });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain("HERD_ADMIN_TOKEN");

    writeFileSync(proposed, `export default { nodes: [{ id: "a", olama: "x" }] };\n`);
    const invalid = await herd(["plan", proposed, "--router", router.url], { env });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`nodes[0].olama: unknown key; did you mean "ollama"?`);
    expect(await router.stop()).toBe(0);
  });

  test("`herd plan` alone (as security.md prints it), where herd.config.ts is: it asks the router on this machine at the file's own server.port", async () => {
    const dir = tmpDir();
    const [port] = await freePorts(1);
    const file = join(dir, "herd.config.ts");
    writeFileSync(file, config(a, `server: { port: ${port} }`));
    const env = { HERD_ADMIN_TOKEN: ADMIN };
    const router = await startRouterProcess(["serve", "--config", file, "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { env });
    expect(router.url).toBe(`http://127.0.0.1:${port}`);
    const same = await herd(["plan"], { cwd: dir, env });
    expect([same.code, same.stderr]).toEqual([0, ""]);
    expect(same.stdout).toContain(`against http://127.0.0.1:${port} `);
    expect(same.stdout).toContain("no changes");
    expect(await router.stop()).toBe(0);
  });

  test("a router that cannot be asked is one line and exit 1; a --router that is not a URL is a usage error", async () => {
    const file = join(tmpDir(), "herd.config.ts");
    writeFileSync(file, config(a));
    const down = await herd(["plan", file, "--router", "http://127.0.0.1:1"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toStartWith("herd: cannot reach the router at http://127.0.0.1:1");
    expect(down.stderr.trim().split("\n")).toHaveLength(1);
    const bad = await herd(["plan", file, "--router", "localhost:11435"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--router: expected a URL like http://10.0.0.1:11435, got "localhost:11435"`);
  });
});

describe("which config each node runs", () => {
  const PRIMARY = "gitops-primary-credential-0123456789";
  const fleet = (extra: string) =>
    `export default { heartbeat: { intervalMs: 200, timeoutMs: 1000, offlineMs: 2000 }, auth: { nodeToken: "fleet-token" }, agents: { credentials: { primary: "${PRIMARY}" } }${extra} };\n`;

  /** A router on `fleet("")`, and a simulated Mac's Ollama for the agents these tests start. */
  async function fleetRouter() {
    const ollama = await startSimOllama({ id: "mac" });
    onCleanup({ run: () => ollama.stop() });
    const dir = tmpDir();
    const file = join(dir, "herd.config.ts");
    writeFileSync(file, fleet(""));
    const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    return { ollama, router, routerHash: (await getJson(`${router.url}/fleet/status`)).config.hash as string };
  }

  test("an agent reports its config hash and version; /fleet/status and /metrics flag a node whose config is not the router's", async () => {
    const { ollama, router, routerHash } = await fleetRouter();
    // The Mac has not pulled yet: its copy of the file lacks the last commit.
    const stale = join(tmpDir(), "herd.config.ts");
    writeFileSync(stale, fleet(`, modelMap: { old: "llama3.2:3b" }`));
    spawnHerd(["node", "--router", router.url, "--ollama", ollama.url, "--node-id", "mac-1", "--config", stale], { env: { HERD_NODE_TOKEN: "fleet-token" } });
    const node = await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac-1" && n.config_hash), 5000, "mac-1's report");
    const staleHash = hashOf((await herd(["check-config", stale])).stdout);
    expect(node).toMatchObject({ config_hash: staleHash, config_drift: true, version_drift: false, agent_version: VERSION });
    expect(node.config_hash).not.toBe(routerHash);
    const metrics = await (await fetch(`${router.url}/metrics`, { headers: { authorization: `Bearer ${PRIMARY}` } })).text();
    expect(metrics).toContain(`herd_info{version="${VERSION}",config_hash="${routerHash}"} 1`);
    expect(metrics).toContain(`herd_node_drift{node="mac-1",version="${VERSION}",config_hash="${staleHash}"} 1`);

    // It pulls: the same file as the router's, and the drift is gone.
    writeFileSync(stale, fleet(""));
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac-1" && n.config_hash === routerHash && !n.config_drift), 5000, "mac-1 on the router's config");
  });

  test("Health's config_drift: a Mac on another config, or whose agent refused its copy (the router sees it only in the heartbeat), is a warning saying what to do", async () => {
    const { ollama, router, routerHash } = await fleetRouter();
    const drift = async (severity: string) =>
      eventually(async () => {
        const check = (await getJson(`${router.url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === "config_drift");
        return check?.severity === severity && check;
      }, 5000, `config_drift ${severity}`);
    const copy = join(tmpDir(), "herd.config.ts");
    writeFileSync(copy, fleet(""));
    spawnHerd(["node", "--router", router.url, "--ollama", ollama.url, "--node-id", "mac-2", "--config", copy], { env: { HERD_NODE_TOKEN: "fleet-token" } });
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac-2" && n.config_hash), 5000, "mac-2's report");
    expect((await drift("ok")).finding).toBe(`all 1 agent(s) run the router's config (hash ${routerHash})`);

    // A copy one commit behind.
    writeFileSync(copy, fleet(`, modelMap: { old: "llama3.2:3b" }`));
    const behindHash = hashOf((await herd(["check-config", copy])).stdout);
    const behind = await drift("warning");
    expect([behind.finding, behind.nodes]).toEqual([`mac-2 runs config hash ${behindHash}, the router ${routerHash}`, ["mac-2"]]);
    expect(behind.recommendation).toContain("deploy the router's config to mac-2");

    // A broken save of the copy: the agent keeps what it ran, and says why in its heartbeat, never the values it refused.
    const secret = "not-a-node-credential-0123456789";
    writeFileSync(copy, fleet(`, modelMap: { old: "llama3.2:3b" }, nodes: [{ id: "mac-2", ollama: "${secret}" }]`));
    const refused = await eventually(async () => {
      const check = (await getJson(`${router.url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === "config_drift");
      return check?.finding.includes("refused") && check;
    }, 5000, "the refused copy on the Health page");
    expect(refused.severity).toBe("warning");
    expect(refused.finding).toBe(`mac-2's agent refused its copy of the config (herd.config.ts: nodes[0].ollama: expected a URL like http://10.0.0.2:11434); it still runs hash ${behindHash}, the router ${routerHash}`);
    expect(refused.recommendation).toContain("fix the config file on mac-2 (`herd check-config FILE` there lists every problem)");
    const node = (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac-2");
    expect(node).toMatchObject({ config_hash: behindHash, config_drift: true, config_error: "herd.config.ts: nodes[0].ollama: expected a URL like http://10.0.0.2:11434" });
    expect(JSON.stringify(await getJson(`${router.url}/dashboard/api/health?refresh=1`))).not.toContain(secret);

    // Fixed and deployed: the router's file again.
    writeFileSync(copy, fleet(""));
    await drift("ok");
    expect((await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac-2").config_error).toBeNull();
  });
});
