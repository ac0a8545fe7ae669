// The compiled binary as a user gets it: copied alone into an empty folder
// next to a herd.config.ts, it serves, reloads, and brings its own types.
import { beforeAll, describe, expect, test } from "bun:test";
import { countTokens } from "gpt-tokenizer/encoding/cl100k_base";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HOST_TARGET, TARGETS, compile } from "../compile/build.ts";
import pkg from "../package.json" with { type: "json" };
import { printed, runLine, startLine } from "./doc-commands.ts";
import { eventually, getJson, herd, spawnHerd, startRouterProcess, tmpDir } from "./helpers.ts";

const dir = tmpDir();
const bin = join(dir, "herd");

beforeAll(async () => {
  if (!TARGETS[HOST_TARGET]) throw new Error(`herd ships no binary for ${HOST_TARGET}; targets: ${Object.keys(TARGETS).join(", ")}`);
  copyFileSync(await compile(HOST_TARGET), bin);
}, 120_000);

describe(`the ${HOST_TARGET} binary, alone in an empty folder`, () => {
  test("knows its version and validates configs", async () => {
    expect((await herd(["version"], { bin, cwd: dir })).stdout.trim()).toBe(pkg.version);
    expect((await herd(["--version"], { bin, cwd: dir })).stdout.trim()).toBe(pkg.version);
    writeFileSync(join(dir, "bad.yaml"), "server:\n  prot: 1\n");
    const bad = await herd(["check-config", "bad.yaml"], { bin, cwd: dir });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`server.prot: unknown key; did you mean "port"?`);
  });

  test("a bad flag or value is one line and exit 2, no stack; -v is the version", async () => {
    expect((await herd(["-v"], { bin, cwd: dir })).stdout.trim()).toBe(pkg.version);
    for (const [args, message] of [
      [["node", "--router", "localhost:11435"], `herd: --router: expected a URL such as http://10.0.0.2:11435, got "localhost:11435"; see \`herd --help\``],
      [["init", join(dir, "missing")], `herd: init: ${join(dir, "missing")} is not a directory; create it first; see \`herd --help\``],
    ] as [string[], string][]) {
      expect(await herd(args, { bin, cwd: dir })).toEqual({ code: 2, stdout: "", stderr: `${message}\n` });
    }
  });

  test("its LaunchAgent runs the binary itself", async () => {
    writeFileSync(join(dir, "service.config.ts"), "export default {};\n");
    const r = await herd(["service", "install", "--dry-run", "--config", "service.config.ts"], { bin, cwd: dir, env: { HOME: tmpDir() } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`<array>\n    <string>${bin}</string>\n    <string>--config</string>\n    <string>${join(dir, "service.config.ts")}</string>\n  </array>`);
  });

  test("`herd init` writes the config, its types and schema from inside the binary", async () => {
    const r = await herd(["init"], { bin, cwd: dir });
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "herd.d.ts"), "utf8")).toContain("export interface HerdConfig");
    expect(JSON.parse(readFileSync(join(dir, "herd.schema.json"), "utf8")).properties.nodes).toBeDefined();
  });

  test("serves /healthz and reloads herd.config.ts when the file changes", async () => {
    const config = (id: string) => `import type { HerdConfig } from "./herd";\nexport default { nodes: [{ id: "${id}", ollama: "http://127.0.0.1:9" }] } satisfies HerdConfig;\n`;
    writeFileSync(join(dir, "herd.config.ts"), config("first"));
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"], { bin, cwd: dir });
    // Alive, but nothing answers at its one node's address: degraded, and why.
    expect(await getJson(`${router.url}/healthz`)).toMatchObject({ status: "degraded", reasons: expect.arrayContaining(["no node is online (1 known)"]) });
    const ids = async () => (await getJson(`${router.url}/fleet/status`)).nodes.map((n: any) => n.node_id);
    expect(await ids()).toEqual(["first"]);
    writeFileSync(join(dir, "herd.config.ts"), config("second"));
    await eventually(async () => (await ids())[0] === "second", 3000, "the reload");
    expect(await router.stop()).toBe(0);
  });

  test("a herd.config.ts that imports its nodes: an edit to the imported file reloads, twice; a syntax error there is named by line", async () => {
    const nodes = (id: string) => `export const nodes = [{ id: "${id}", ollama: "http://127.0.0.1:9" }];\n`;
    const sub = join(dir, "imports");
    mkdirSync(join(sub, "fleet"), { recursive: true });
    writeFileSync(join(sub, "herd.config.ts"), `import { nodes } from "./fleet/nodes";\nexport default { nodes };\n`);
    writeFileSync(join(sub, "fleet", "nodes.ts"), nodes("first"));
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"], { bin, cwd: sub });
    const ids = async () => (await getJson(`${router.url}/fleet/status`)).nodes.map((n: any) => n.node_id);
    expect(await ids()).toEqual(["first"]);
    for (const id of ["second", "third"]) {
      writeFileSync(join(sub, "fleet", "nodes.ts"), nodes(id));
      await eventually(async () => (await ids())[0] === id, 3000, `the reload to ${id}`);
    }
    expect(await router.stop()).toBe(0);
    writeFileSync(join(sub, "fleet", "nodes.ts"), "export const nodes = [;\n");
    const broken = await herd(["check-config", "herd.config.ts"], { bin, cwd: sub });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`${join(sub, "fleet", "nodes.ts")}:1:23: Unexpected ;`);
  });

  test("its node agent reads the thermal state from inside the binary: one of macOS's on a Mac, elsewhere unknown and why", async () => {
    const sub = join(dir, "agent");
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, "herd.config.ts"), `export default { nodes: [{ id: "mac" }], heartbeat: { intervalMs: 200 } };\n`);
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"], { bin, cwd: sub });
    const agent = spawnHerd(["node", "--router", router.url, "--node-id", "mac", "--ollama", "http://127.0.0.1:9"], { bin, cwd: sub });
    const thermal = await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "mac")?.thermal, 8000, "the agent's thermal state");
    if (process.platform === "darwin") expect(["nominal", "fair", "serious", "critical"]).toContain(thermal.state);
    else expect(thermal).toEqual({ state: "unknown", reason: `not macOS (${process.platform}): herd reads the thermal state from macOS's NSProcessInfo` });
    expect(await agent.stop()).toBe(0);
    expect(await router.stop()).toBe(0);
  });

  test("serves the dashboard and its chart library from inside the binary", async () => {
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"], { bin, cwd: dir });
    const get = async (path: string, type: string) => {
      const res = await fetch(`${router.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith(type);
      return res.text();
    };
    const html = await get("/dashboard/trends", "text/html");
    const assets = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.sort()).toEqual(["/dashboard/assets/style.css", "/dashboard/assets/trends.js", "/dashboard/assets/uplot.css", "/dashboard/assets/uplot.js"]);
    expect(await get("/dashboard/assets/uplot.js", "text/javascript")).toContain("uPlot");
    expect(await get("/dashboard/assets/uplot.css", "text/css")).toContain(".uplot");
    expect(await get("/dashboard/assets/herd.js", "text/javascript")).toContain("export function h(");
    expect(await get("/favicon.svg", "image/svg+xml")).toStartWith("<svg");
    expect(await router.stop()).toBe(0);
  });

  test("writes its traces from inside the binary (the writer's worker thread is bundled) and keeps them across a restart", async () => {
    writeFileSync(join(dir, "herd.config.ts"), "export default { nodes: [] };\n");
    const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "traces-data"];
    const first = await startRouterProcess(args, { bin, cwd: dir });
    const res = await fetch(`${first.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "nowhere:1b" }) });
    expect(res.status).toBe(404);
    expect(await first.stop()).toBe(0);
    const second = await startRouterProcess(args, { bin, cwd: dir });
    const { traces } = await getJson(`${second.url}/dashboard/api/traces`);
    expect(traces.map((t: any) => [t.model, t.status])).toEqual([["nowhere:1b", "failed"]]);
    expect(await second.stop()).toBe(0);
  });

  test("counts tokens from inside the binary (the tokenizer's worker thread is an entrypoint of its own), not by the estimate", async () => {
    writeFileSync(join(dir, "herd.config.ts"), "export default { nodes: [] };\n");
    const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "count-data"], { bin, cwd: dir });
    const count = async (content: string) => {
      const res = await fetch(`${router.url}/v1/messages/count_tokens`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "claude-sonnet-4-5", messages: [{ role: "user", content }] }) });
      return ((await res.json()) as { input_tokens: number }).input_tokens;
    };
    const text = "antidisestablishmentarianism ".repeat(100);
    // cl100k_base spells the word in a few tokens; the estimate would say 29 characters / 4.
    expect((await count(`x${text}`)) - (await count("x"))).toBe(countTokens(`x${text}`) - countTokens("x"));
    expect(await router.stop()).toBe(0);
  });

  test("exports a request's spans over OTLP from inside the binary (the exporter is an entrypoint of its own), the last ones at its stop", async () => {
    const paths: string[] = [];
    const names: string[] = [];
    const collector = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        paths.push(new URL(req.url).pathname);
        const text = await req.text();
        names.push(...[...text.matchAll(/"name":"(herd\.[a-z.]+)"/g)].map((m) => m[1]!));
        return Response.json({});
      },
    });
    try {
      writeFileSync(join(dir, "herd.config.ts"), `export default { nodes: [], telemetry: { otlp: { endpoint: "http://127.0.0.1:${collector.port}", intervalMs: 60000 } } };\n`);
      const router = await startRouterProcess(["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "otlp-data"], { bin, cwd: dir });
      expect((await fetch(`${router.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "nowhere:1b" }) })).status).toBe(404);
      expect(await router.stop()).toBe(0);
      expect(paths).toContain("/v1/traces");
      expect(paths).toContain("/v1/metrics");
      expect(names).toEqual(expect.arrayContaining(["herd.request", "herd.admit", "herd.route", "herd.requests"]));
    } finally {
      await collector.stop(true);
    }
  });
});

describe("the README's lines for the binary, each run as printed where a download landed", () => {
  test("chmod +x, init, check-config, then ./herd (router and this Mac's agent, init's this-mac) and ./herd --host 0.0.0.0", async () => {
    const landed = tmpDir();
    // A download: the file alone, no execute permission.
    copyFileSync(bin, join(landed, "herd"));
    chmodSync(join(landed, "herd"), 0o644);
    // The environment, not the line: a fresh HOME for ~/.herd, and any free port for the router.
    const env = { HOME: tmpDir(), HERD_PORT: "0" };
    const sh = (line: string) => runLine(line, { cwd: landed, env });
    const start = (line: string) => startLine(line, { cwd: landed, env });
    expect(await sh(printed("README.md", /^chmod \+x \.\/herd$/))).toMatchObject({ code: 0 });
    expect(statSync(join(landed, "herd")).mode & 0o111).toBe(0o111);
    expect(await sh(printed("README.md", /^\.\/herd init$/))).toMatchObject({ code: 0 });
    const checked = await sh(printed("README.md", /^\.\/herd check-config /));
    expect([checked.code, checked.stdout]).toEqual([0, expect.stringContaining("1 node(s): this-mac")]);
    const alone = start(printed("README.md", /^\.\/herd$/));
    await alone.waitFor(/serving on http:\/\/127\.0\.0\.1:\d+ \(listening on 127\.0\.0\.1:/);
    await alone.waitFor(/node this-mac: agent \S+ joined/);
    await alone.stop();
    const shared = start(printed("README.md", /^\.\/herd --host 0\.0\.0\.0$/));
    await shared.waitFor(/serving on http:\/\/127\.0\.0\.1:\d+ \(listening on 0\.0\.0\.0:/);
    await shared.stop();
  });
});
