// The structure, read from the code's own imports: herd's modules form layers
// (docs/architecture.md), each importing only from layers below it, and no
// circles. An exception, were one ever needed, is listed here by name, so it
// is seen: a new one fails this test, and so does one that is gone but still
// listed (the list only shrinks). Issue 14 emptied it.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dir, "..");

/** Lowest first. A module may import its own layer and the ones before it. */
const LAYERS: [name: string, files: RegExp][] = [
  ["core: the language of the request path, and leaf helpers", /^src\/(core\/|(log|errors|abort|within|percentile|version)\.ts$)/],
  ["config and store, and the credentials a config holds", /^src\/(config|store)\//],
  ["fleet: what the nodes hold, queues, scoring", /^src\/fleet\//],
  ["backends: calling nodes", /^src\/backends\//],
  ["router and pipeline: resolving, planning, attempting, relaying, tracing a request", /^src\/(router|pipeline)\//],
  ["admission: the guard, client keys, route facts, body limits", /^src\/auth\//],
  ["surfaces, agents, dashboard, platform: the HTTP faces, and the platform connection", /^src\/(surfaces|agents|dashboard|platform)\//],
  ["composition: the app, the runtime, and the app's idle sources for tests", /^src\/(app|app-fixtures|runtime)\.ts$/],
  ["programs: the CLI, commands, node agent, simulator", /^src\/(cli\.ts$|commands\/|node\/|sim\/)/],
];

/**
 * Imports that run against the layers, as "from -> to": an upward one, or one import of a circle inside a layer
 * (the one that should not be there). None today.
 */
const KNOWN_DEBT = new Set<string>([]);

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts"))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Each module's relative imports (and re-exports), resolved to repository paths. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources("src")) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+\.ts)"/gm)].map((m) => relative(ROOT, resolve(dirname(join(ROOT, file)), m[1]!)));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

const layerOf = (file: string) => LAYERS.findIndex(([, files]) => files.test(file));

test("every module is in a layer", () => {
  expect([...importGraph().keys()].filter((f) => layerOf(f) < 0)).toEqual([]);
});

test("imports run down the layers, but for the listed exceptions", () => {
  const upward: string[] = [];
  for (const [from, targets] of importGraph()) for (const to of targets) if (layerOf(to) > layerOf(from)) upward.push(`${from} -> ${to}`);
  expect(upward.filter((edge) => !KNOWN_DEBT.has(edge)).sort()).toEqual([]);
});

test("every listed exception still exists: one that is gone leaves the list", () => {
  const edges = new Set([...importGraph()].flatMap(([from, targets]) => targets.map((to) => `${from} -> ${to}`)));
  expect([...KNOWN_DEBT].filter((edge) => !edges.has(edge)).sort()).toEqual([]);
});

/** The inference surfaces and their codecs: they decode a wire and encode an answer, the pipeline does the rest. */
const INFERENCE_SURFACES = /^src\/surfaces\/(ollama|openai|completions|anthropic|responses|images|transcription|codex-rewrites|herd-fields|body|embed-input|numeric-options|sse|ids)[-.]/;

test("the inference surfaces import nothing of the router or the backends: resolving, fitting, planning and calling are the pipeline's", () => {
  const reaching = [...importGraph()]
    .filter(([from]) => INFERENCE_SURFACES.test(from))
    .flatMap(([from, targets]) => targets.filter((to) => /^src\/(router|backends)\//.test(to)).map((to) => `${from} -> ${to}`));
  expect(reaching.sort()).toEqual([]);
});

test("only the command builds the runtime: nothing of the app or the request path imports runtime.ts", () => {
  const importers = [...importGraph()].filter(([, targets]) => targets.includes("src/runtime.ts")).map(([from]) => from);
  expect(importers).toEqual(["src/commands/run.ts"]);
});

test("no circle of imports, once the listed exceptions are set aside", () => {
  const graph = importGraph();
  const state = new Map<string, "open" | "done">();
  const circles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "open") {
      circles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
      return;
    }
    state.set(file, "open");
    for (const to of graph.get(file) ?? []) if (!KNOWN_DEBT.has(`${file} -> ${to}`)) visit(to, [...path, file]);
    state.set(file, "done");
  };
  for (const file of graph.keys()) visit(file, []);
  expect(circles).toEqual([]);
});
