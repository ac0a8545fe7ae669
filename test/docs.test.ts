// The docs' claims that a test can check: every config key path they write is the schema's,
// every `METHOD /path` a route the router serves, every X-Fleet-*/X-Herd-* header one src/ uses
// (test/doc-claims.ts says how each is recognised).
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
