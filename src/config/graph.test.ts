import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { graphHash, importGraph, readGraph, SyntaxProblems } from "./graph.ts";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "herd-graph-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

test("the graph: the main file, then each relative import once, by the names Bun resolves; types and packages not followed", () => {
  const dir = folder({
    "cfg/main.ts": `import type { A } from "./types";\nimport { B } from "./types2";\nimport { nodes } from "./fleet/nodes.js";\nimport pins from "../up/pins.json";\nimport { x } from "valibot";\nexport default { nodes, pins, x } satisfies B;\n`,
    "cfg/fleet/nodes.ts": `import { more } from "./more";\nimport "../side.ts";\nexport const nodes = more;\n`,
    "cfg/fleet/more/index.ts": `import { nodes } from "../nodes.ts";\nexport const more = [];\n`,
    "cfg/side.ts": "",
    "up/pins.json": "{}",
  });
  const main = join(dir, "cfg/main.ts");
  const files = readGraph(main, readFileSync(main, "utf8")).map((f) => f.path);
  expect(files).toEqual([main, join(dir, "cfg/fleet/nodes.ts"), join(dir, "up/pins.json"), join(dir, "cfg/fleet/more/index.ts"), join(dir, "cfg/side.ts")]);
});

test("a missing import is named; every syntax error in the files reached is named by file:line:column", () => {
  const dir = folder({ "b.ts": "export const x = ;\n", "c.ts": "export default [;\n" });
  expect(() => readGraph(join(dir, "a.ts"), `import "./gone";\n`)).toThrow(`${join(dir, "a.ts")}: cannot find "./gone", which it imports`);
  try {
    readGraph(join(dir, "a.ts"), `import "./b";\nimport "./c";\n`);
    throw new Error("no error");
  } catch (e) {
    expect(e).toBeInstanceOf(SyntaxProblems);
    expect((e as SyntaxProblems).problems).toEqual([`${join(dir, "b.ts")}:1:18: Unexpected ;`, `${join(dir, "c.ts")}:1:17: Unexpected ;`]);
  }
});

test("a file that imports nothing hashes as itself; an imported file's content and name count", () => {
  const sha = new Bun.CryptoHasher("sha256").update("export default {};").digest("hex").slice(0, 12);
  expect(graphHash([{ path: "/c/herd.config.ts", text: "export default {};" }])).toBe(sha);
  const withImport = (name: string, text: string) => graphHash([{ path: "/c/herd.config.ts", text: "export default {};" }, { path: `/c/${name}`, text }]);
  expect(new Set([sha, withImport("a.ts", "1"), withImport("a.ts", "2"), withImport("b.ts", "1")]).size).toBe(4);
});

test("each import evaluates the files as they are now, not as a module cache kept them", async () => {
  const dir = folder({ "main.ts": `import { n } from "./n.ts";\nexport default n;\n`, "n.ts": "export const n = 1;\n" });
  const load = async () => (await importGraph(readGraph(join(dir, "main.ts"), `import { n } from "./n.ts";\nexport default n;\n`))).default;
  expect(await load()).toBe(1);
  writeFileSync(join(dir, "n.ts"), "export const n = 2;\n");
  expect(await load()).toBe(2);
});
