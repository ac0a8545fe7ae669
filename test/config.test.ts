// The config as a user writes it: .ts, .json, .yaml, checked by `herd check-config`,
// with errors that name the path and suggest the key that was meant.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, herd, tmpDir } from "./helpers.ts";

function write(name: string, text: string): string {
  const path = join(tmpDir(), name);
  writeFileSync(path, text);
  return path;
}

const tsConfig = (body: string) => `import type { HerdConfig } from "./herd";\nexport default ${body} satisfies HerdConfig;\n`;

describe("herd check-config", () => {
  test("accepts the repo's own herd.config.ts and every example", async () => {
    for (const file of ["herd.config.ts", "examples/fleet.config.ts", "examples/fleet.config.json", "examples/fleet.config.yaml"]) {
      const r = await herd(["check-config", join(ROOT, file)]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^ok: .* \(hash [0-9a-f]{12}\)/);
    }
  });

  test("the secure example takes every secret from the environment, and names each one that is missing", async () => {
    const file = join(ROOT, "examples/secure-fleet.config.ts");
    const names = ["HERD_NODE_TOKEN", "HERD_ADMIN_TOKEN", "HERD_KEY_OPENWEBUI", "HERD_KEY_AGENTS", "HERD_PRIMARY_TOKEN"];
    const missing = await herd(["check-config", file]);
    expect(missing.code).toBe(1);
    for (const name of names) expect(missing.stderr).toContain(`environment variable ${name} is not set`);
    const env = Object.fromEntries(names.map((name, i) => [name, `secret-value-${i}-of-the-example`]));
    const ok = await herd(["check-config", file], { env });
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toContain("2 node(s): studio, mini; 1 MLX server(s)");
    expect(ok.stdout).not.toContain("secret-value");
  });

  test("the .ts, .json and .yaml examples describe the same fleet", async () => {
    const summaries = await Promise.all(
      ["ts", "json", "yaml"].map(async (ext) => (await herd(["check-config", join(ROOT, `examples/fleet.config.${ext}`)])).stdout.split("\n").slice(1).join("\n")),
    );
    expect(summaries[0]).toContain("3 node(s): studio, mini, air; 2 MLX server(s)");
    expect(summaries[1]).toBe(summaries[0]!);
    expect(summaries[2]).toBe(summaries[0]!);
  });

  test("an unknown key is an error that suggests the nearest known one", async () => {
    const r = await herd(["check-config", write("herd.config.ts", tsConfig(`{ server: { prot: 8080 } }`))]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`server.prot: unknown key; did you mean "port"?`);
    const nested = await herd(["check-config", write("herd.config.json", JSON.stringify({ nodes: [{ id: "a", olama: "http://x:1" }] }))]);
    expect(nested.stderr).toContain(`nodes[0].olama: unknown key; did you mean "ollama"?`);
    const far = await herd(["check-config", write("herd.config.json", JSON.stringify({ zzzzzzzz: 1 }))]);
    expect(far.stderr).toContain("zzzzzzzz: unknown key; known keys: $schema, server, nodes");
  });

  test("every problem is reported with its path, one line each, and no stack trace", async () => {
    const r = await herd([
      "check-config",
      write(
        "herd.config.yaml",
        ["nodes:", "  - id: studio", "    ollama: http://10.0.0.2:11434", "  - id: mini", "    ollama: mini.local", "    mlx:", "      - { model: m, port: 70000, kvBits: 3 }", "heartbeat:", "  intervalMs: fast"].join("\n"),
      ),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("nodes[1].ollama: expected a URL like http://10.0.0.2:11434, got");
    expect(r.stderr).toContain("nodes[1].mlx[0].port: expected at most 65535, got 70000");
    expect(r.stderr).toContain("nodes[1].mlx[0].kvBits: expected 0, 4 or 8");
    expect(r.stderr).toContain(`heartbeat.intervalMs: expected a number, got "fast"`);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  test("rules across fields: unique node ids, Ollama addresses and MLX ports, heartbeat timings in order", async () => {
    const r = await herd([
      "check-config",
      write(
        "herd.config.json",
        JSON.stringify({
          nodes: [
            { id: "a", mlx: [{ model: "x", port: 11440 }, { model: "y", port: 11440 }] },
            { id: "a" },
            { id: "studio", ollama: "http://10.0.0.2:11434" },
            { id: "studio-again", ollama: "http://10.0.0.2:11434/" },
          ],
          heartbeat: { intervalMs: 5000, timeoutMs: 4000, offlineMs: 3000 },
        }),
      ),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`nodes[1].id: "a" is already used by nodes[0]`);
    expect(r.stderr).toContain("nodes[0].mlx[1].port: 11440 is already used by nodes[0].mlx[0]");
    expect(r.stderr).toContain("nodes[3].ollama: http://10.0.0.2:11434 is nodes[2]'s Ollama too; one Mac is one node");
    expect(r.stderr).toContain("heartbeat.timeoutMs: 4000 must be greater than heartbeat.intervalMs (5000)");
  });

  test("an agentless node's hardware: memory, a chip herd knows or a bandwidth, each bad one named", async () => {
    const ok = await herd(["check-config", write("herd.config.ts", tsConfig(`{ nodes: [{ id: "mini", ollama: "http://10.0.0.3:11434", hardware: { memoryGb: 16, chip: "M2 Pro" } }, { id: "box", ollama: "http://10.0.0.4:11434", hardware: { bandwidthGbps: 400 } }] }`))]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    const bad = await herd(["check-config", write("herd.config.json", JSON.stringify({ nodes: [{ id: "a", hardware: { memoryGb: 0, chip: "M9 Hyper", bandwidthGbps: -1, cores: 8 } }] }))]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("nodes[0].hardware.memoryGb: expected the node's memory in GB, at least 1");
    expect(bad.stderr).toContain(`nodes[0].hardware.chip: expected an Apple chip herd knows: "M1", "M1 Pro"`);
    expect(bad.stderr).toContain("nodes[0].hardware.bandwidthGbps: expected the peak memory bandwidth in GB/s, at least 1");
    expect(bad.stderr).toContain("nodes[0].hardware.cores: unknown key");
  });

  test("a worker profile's permissions: Claude Code tool rules, on a claude-code profile only, each bad one named", async () => {
    const profile = (p: Record<string, unknown>) => JSON.stringify({ agents: { profiles: { w: { command: "claude", ...p } } } });
    const ok = await herd(["check-config", write("herd.config.json", profile({ kind: "claude-code", permissions: { allow: ["Bash(git commit *)", "Edit"], deny: ["Bash(curl *)"] } }))]);
    expect([ok.code, ok.stderr]).toEqual([0, ""]);
    const bad = await herd(["check-config", write("herd.config.json", profile({ kind: "claude-code", permissions: { allow: ["run anything", "x".repeat(501)], ask: [] } }))]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`agents.profiles.w.permissions.allow[0]: expected a tool rule like "Bash(git commit *)", "Edit" or "mcp__server"`);
    expect(bad.stderr).toContain("agents.profiles.w.permissions.allow[1]: expected at most 500 characters");
    expect(bad.stderr).toContain("agents.profiles.w.permissions.ask: unknown key");
    const other = await herd(["check-config", write("herd.config.json", profile({ kind: "cli", permissions: { allow: ["Edit"] } }))]);
    expect(other.stderr).toContain(`agents.profiles.w.permissions: only a "claude-code" profile takes permission rules (kind)`);
  });

  test("a .ts config that does not compile or has no default export gets one clear line", async () => {
    const broken = await herd(["check-config", write("herd.config.ts", "export default { server: { port: 1, }\n")]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/herd: invalid config .*herd\.config\.ts\n {2}\S/);
    const noDefault = await herd(["check-config", write("herd.config.ts", "export const x = 1;\n")]);
    expect(noDefault.stderr).toContain("it has no default export");
    const missing = await herd(["check-config", "/nonexistent/herd.config.ts"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("file not found");
  });
});

describe("herd init and the editor's view of the config", () => {
  test("writes a starter config that passes check-config and typechecks against herd.d.ts", async () => {
    const dir = tmpDir();
    const r = await herd(["init", dir]);
    expect(r.code).toBe(0);
    for (const f of ["herd.config.ts", "herd.d.ts", "herd.schema.json"]) expect(r.stdout).toContain(join(dir, f));
    expect((await herd(["check-config", join(dir, "herd.config.ts")])).code).toBe(0);

    const tsc = join(ROOT, "node_modules/.bin/tsc");
    const check = (file: string) =>
      Bun.spawnSync([tsc, "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", file], { cwd: dir });
    expect(check("herd.config.ts").exitCode).toBe(0);
    // The types really constrain: a typo in a key fails the editor's check too.
    writeFileSync(join(dir, "typo.ts"), readFileSync(join(dir, "herd.config.ts"), "utf8").replace("port: 11435", "prot: 11435"));
    const typo = check("typo.ts");
    expect(typo.exitCode).not.toBe(0);
    expect(typo.stdout.toString()).toContain("prot");

    const again = await herd(["init", dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already exists; pass --force");
    expect((await herd(["init", dir, "--force"])).code).toBe(0);
  });

  test("`herd schema` prints a JSON Schema that knows every section and rejects unknown keys", async () => {
    const r = await herd(["schema"]);
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(["server", "nodes", "pins", "modelMap", "scoring", "heartbeat", "features"]));
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.heartbeat.properties.intervalMs.default).toBe(5000);
    expect(schema.properties.nodes.items.required).toEqual(["id"]);
  });
});

test("the committed herd.schema.json is what `herd schema` prints (regenerate: bun src/cli.ts schema > herd.schema.json)", async () => {
  const r = await herd(["schema"]);
  expect(readFileSync(join(ROOT, "herd.schema.json"), "utf8")).toBe(r.stdout);
});
