// Live reload through the public surfaces: edit the file, watch /fleet/status.
import { describe, expect, test } from "bun:test";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

const config = (nodes: string[], extra = "") =>
  // Each node its own Ollama (one that never answers): two entries for one Ollama are one Mac, which the config refuses.
  `export default { nodes: [${nodes.map((id, i) => `{ id: "${id}", ollama: "http://127.0.0.1:${i + 1}" }`).join(", ")}], ${extra} };\n`;

async function routerWith(text: string) {
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, text);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
  const status = () => getJson(`${router.url}/fleet/status`);
  return { dir, file, router, status };
}

const ids = (s: any) => s.nodes.map((n: any) => n.node_id).sort();

describe("live reload", () => {
  test("a saved edit applies within a second; the hash and loaded_at follow", async () => {
    const { file, status } = await routerWith(config(["a"]));
    const before = await status();
    expect(ids(before)).toEqual(["a"]);
    expect(before.config.path).toBe(file);
    expect(before.config.hash).toMatch(/^[0-9a-f]{12}$/);

    const saved = Date.now();
    writeFileSync(file, config(["a", "b"]));
    const after = await eventually(async () => {
      const s = await status();
      return ids(s).length === 2 && s;
    }, 3000, "node b to appear");
    expect(Date.now() - saved).toBeLessThan(1500);
    expect(ids(after)).toEqual(["a", "b"]);
    expect(after.config.hash).not.toBe(before.config.hash);
    expect(after.config.loaded_at).toBeGreaterThan(before.config.loaded_at);
    expect(after.config.last_error).toBeNull();
  });

  test("an invalid edit keeps the last good config and shows the error; fixing it clears the error", async () => {
    const { file, router, status } = await routerWith(config(["a"]));
    const good = await status();
    writeFileSync(file, `export default { nodes: [{ id: "a", olama: "http://x:1" }] };\n`);
    const bad = await eventually(async () => {
      const s = await status();
      return s.config.last_error && s;
    }, 3000, "last_error");
    expect(bad.config.hash).toBe(good.config.hash);
    expect(ids(bad)).toEqual(["a"]);
    expect(bad.config.last_error.message).toContain(`nodes[0].olama: unknown key; did you mean "ollama"?`);
    await router.waitFor(/config not reloaded, keeping [0-9a-f]{12}: .*olama/);
    const healthz = await fetch(`${router.url}/healthz`);
    expect(healthz.status).toBe(200);
    const health: any = await healthz.json();
    expect(health.status).toBe("degraded");
    expect(health.config_error).toContain("olama");
    // Its node is not up either (nothing listens at its address): every reason, each once.
    expect(health.reasons).toHaveLength(3);
    expect(health.reasons[0]).toBe("no node is online (1 known)");
    expect(health.reasons[1]).toStartWith("a: Ollama at http://127.0.0.1:1 does not answer (connection refused); start Ollama with `ollama serve`");
    expect(health.reasons[2]).toMatch(new RegExp(`^the last config edit was refused \\(.*olama.*\\); still running hash ${good.config.hash}$`));

    writeFileSync(file, config(["c"]));
    const fixed = await eventually(async () => {
      const s = await status();
      return s.config.last_error === null && ids(s)[0] === "c" && s;
    }, 3000, "the fix to apply");
    expect(fixed.config.hash).not.toBe(good.config.hash);
    expect((await getJson(`${router.url}/healthz`)).reasons.some((r: string) => r.includes("config"))).toBe(false);
  });

  test("editors that save by writing a new file and renaming it over the old one are seen", async () => {
    const { dir, file, status } = await routerWith(config(["a"]));
    for (const next of ["b", "c"]) {
      const tmp = join(dir, `.herd.config.ts.swp-${next}`);
      writeFileSync(tmp, config([next]));
      renameSync(tmp, file);
      await eventually(async () => ids(await status())[0] === next, 3000, `node ${next} after rename`);
    }
  });

  test("no request is dropped while the config changes under load, and a burst of saves ends on the last one", async () => {
    const { file, router, status } = await routerWith(config(["n0"]));
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const load = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const res = await fetch(`${router.url}/fleet/status`).catch((e: Error) => e);
        if (res instanceof Error || !res.ok) failures.push(res instanceof Error ? res.message : `HTTP ${res.status}`);
        else (await res.json(), ok++);
      }
    });
    for (let i = 1; i <= 20; i++) {
      writeFileSync(file, config([`n${i}`]));
      await Bun.sleep(i % 5 === 0 ? 300 : 20);
    }
    await eventually(async () => ids(await status())[0] === "n20", 3000, "the last save to win");
    stop = true;
    await Promise.all(load);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(50);
  });
});

describe("live reload under routed load", () => {
  test("50 saves in 5 s, some broken, while clients chat: none of their requests fails and the router ends on the last file", async () => {
    const sim = await startSimOllama({ id: "n1", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] });
    try {
      // Every version keeps the node and changes something else; 5, 15, 25, 35 and 45 are broken.
      const version = (i: number) =>
        i % 10 === 5
          ? `export default { nodes: [{ id: "n1", ollama: "${sim.url}", paralel: ${i} }] };\n`
          : `export default { nodes: [{ id: "n1", ollama: "${sim.url}", labels: { save: "${i}" } }], routing: { maxRetries: ${i % 3} } };\n`;
      const { file, router, status } = await routerWith(version(0));
      await eventually(async () => (await status()).fleet.nodes_online === 1, 3000, "n1 online");
      let stop = false;
      let ok = 0;
      const failures: string[] = [];
      const chat = async (stream: boolean) => {
        const res = await fetch(`${router.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream, options: { num_predict: 4 } }) });
        const text = await res.text();
        const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
        if (res.status !== 200 || last.done !== true) failures.push(`HTTP ${res.status}: ${text.slice(0, 200)}`);
        else ok++;
      };
      const load = Array.from({ length: 4 }, async (_, i) => {
        while (!stop) await chat(i % 2 === 0).catch((e: Error) => failures.push(e.message));
      });
      // Ten bursts of five saves 20 ms apart, each burst followed by a pause long enough for its last save to apply.
      const began = Date.now();
      for (let i = 1; i <= 50; i++) {
        writeFileSync(file, version(i));
        await Bun.sleep(i % 5 === 0 ? 400 : 20);
      }
      expect(Date.now() - began).toBeLessThan(6000);
      const hash = new Bun.CryptoHasher("sha256").update(version(50)).digest("hex").slice(0, 12);
      const last = await eventually(async () => {
        const s = await status();
        return s.config.hash === hash && s;
      }, 3000, "the last save to win");
      stop = true;
      await Promise.all(load);
      expect(failures).toEqual([]);
      expect(ok).toBeGreaterThan(100);
      expect(last.config.last_error).toBeNull();
      expect(last.nodes[0].labels).toEqual({ save: "50" });
      expect((await getJson(`${router.url}/fleet/limits`)).max_retries).toBe(50 % 3);
      // The bursts' last saves applied as they came; the broken ones were refused, each keeping the good version before it.
      expect(router.output().match(/config reloaded from/g)!.length).toBeGreaterThanOrEqual(4);
      expect(router.output().match(/config not reloaded, keeping [0-9a-f]{12}: .*paralel/g)!.length).toBeGreaterThanOrEqual(4);
    } finally {
      await sim.stop();
    }
  }, 20_000);
});
