// The docs' claims that a test can check: every config key path they write is the schema's,
// every `METHOD /path` a route the router serves, every X-Fleet-*/X-Herd-* header one src/ uses
// (test/doc-claims.ts says how each is recognised); docs/benchmarks.md's shape (the latest
// figures of each bench section first, every run in docs/benchmarks-history.md); and the Node
// the README names, which every package in the lock accepts.
import { beforeAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildApp } from "../src/app.ts";
import { idleSources } from "../src/app-fixtures.ts";
import { herdConfigSchema } from "../src/config/schema.ts";
import { docProblems, type Facts } from "./doc-claims.ts";

const ROOT = join(import.meta.dir, "..");
const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

let facts: Facts;
beforeAll(async () => {
  const routes = buildApp(await idleSources()).routes.map((r) => `${r.method} ${r.path}`);
  const code = [...new Bun.Glob("src/**/*.ts").scanSync(ROOT)].filter((f) => !f.endsWith(".test.ts"));
  facts = { config: herdConfigSchema, routes, source: code.map((f) => readFileSync(join(ROOT, f), "utf8")).join("\n") };
});

test("every config key, route and header the docs name is one herd has", () => {
  const problems = DOCS.flatMap((doc) => docProblems(readFileSync(join(ROOT, doc), "utf8"), facts).map((p) => `${doc}: ${p}`));
  expect(problems).toEqual([]);
});

test("a wrong key, route or header is caught; what is not written as one is left alone", () => {
  const planted = [
    "Set `routing.strategi` or `nodes[].embedding.texts`; `routing.strategy: \"score\"` and `pins[\"*\"]` are fine.",
    "`GET /fleet/statuses` is not served; `GET /sessions/{id}/replies?wait=1` and `DELETE /fleet/pin/{model}` are.",
    "Headers: X-Fleet-Nodes is made up, X-Fleet-Node is real.",
    "Not keys: `server.max_retries`, `platform.json`, `server.prot: unknown key`, `POST <sim>/_sim`.",
  ].join("\n");
  expect(docProblems(planted, facts)).toEqual([
    "config key `routing.strategi` is not in src/config/schema.ts",
    "config key `nodes[].embedding.texts` is not in src/config/schema.ts",
    "route `GET /fleet/statuses` is not one the router serves",
    "header X-Fleet-Nodes is never used in src/",
  ]);
});

test("docs/benchmarks.md opens with the latest figures of each bench section, each with its date and command; the runs are in the history, newest first", () => {
  const doc = readFileSync(join(ROOT, "docs/benchmarks.md"), "utf8");
  // Each section's first paragraph: its date, then the command that measured it.
  const sections = [...doc.matchAll(/^## (.+)\n\n((?:.+\n)+)/gm)].map(([, title, first]) => ({ title, dated: /^\d{4}-\d{2}-\d{2}\b[^]*`[^`]*npm run bench[^`]*`/.test(first!) }));
  expect(sections).toEqual(["The binary", "Router overhead", "Upstream HTTP client", "Routing", "Load", "OTLP export (telemetry.otlp)"].map((title) => ({ title, dated: true })));
  // The routing section's fleets drawn from seeds (issue 29) are dated and commanded as a section is.
  expect(doc).toMatch(/^### Random fleets\n\n\d{4}-\d{2}-\d{2}\b.*\n`[^`]*npm run bench -- routing`/m);
  const runs = [...readFileSync(join(ROOT, "docs/benchmarks-history.md"), "utf8").matchAll(/^## (\d{4}-\d{2}-\d{2})/gm)].map((m) => m[1]!);
  expect(runs.length).toBeGreaterThan(10);
  expect(runs).toEqual(runs.toSorted().reverse());
});

test("the README names the Node that npm install needs (package.json's engines.node), and every package the lock installs accepts it: npm install is quiet there", () => {
  const json = (file: string) => JSON.parse(readFileSync(join(ROOT, file), "utf8"));
  const range: string | undefined = json("package.json").engines?.node;
  expect(range).toMatch(/^>=\d+$/);
  const major = range!.slice(2);
  expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain(`Node.js ${major} or newer`);
  const packages: Record<string, { engines?: { node?: string }; optional?: boolean }> = json("package-lock.json").packages;
  const refusing = Object.entries(packages).flatMap(([path, p]) => (!p.optional && p.engines?.node && !Bun.semver.satisfies(`${major}.0.0`, p.engines.node) ? [`${path || "herd"}: ${p.engines.node}`] : []));
  expect(refusing).toEqual([]);
});
