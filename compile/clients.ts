// The real client programs and libraries the tests drive (test/clients-*.test.ts),
// pinned exactly in package.json's devDependencies: the one place their versions live.
// `npm run clients:update` moves every one to its newest release and rewrites the
// table in docs/clients.md; `npm test` then says whether herd still works with them.
// Usage: bun compile/clients.ts update | table
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Package → what it is, as docs/clients.md names it. */
export const CLIENTS: Record<string, string> = {
  "@anthropic-ai/claude-code": "Claude Code (native binary)",
  "@openai/codex": "Codex CLI (native binary)",
  "opencode-ai": "opencode (native binary)",
  ollama: "ollama-js",
  "@langchain/ollama": "LangChain: ChatOllama, OllamaEmbeddings",
  "@langchain/openai": "LangChain: ChatOpenAI, OpenAIEmbeddings, Responses API",
  "@langchain/core": "LangChain core",
  ai: "AI SDK",
  "@ai-sdk/openai-compatible": "AI SDK provider: OpenAI-compatible",
  "@ai-sdk/anthropic": "AI SDK provider: Anthropic",
  "ollama-ai-provider-v2": "AI SDK provider: Ollama (ollama-ai-provider-v2)",
  "ai-sdk-ollama": "AI SDK provider: Ollama (ai-sdk-ollama)",
};

const root = join(import.meta.dir, "..");
const DOC = join(root, "docs/clients.md");
const BEGIN = "<!-- clients:begin (written by npm run clients:update) -->";
const END = "<!-- clients:end -->";

/** The pinned version of each client, from package.json. */
export function pinnedVersions(): Record<string, string> {
  const dev = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies;
  return Object.fromEntries(Object.keys(CLIENTS).map((name) => [name, dev[name] ?? "not pinned"]));
}

/** The table docs/clients.md must hold between its markers. */
export function versionTable(): string {
  const rows = Object.entries(pinnedVersions()).map(([name, version]) => `| \`${name}\` | ${version} | ${CLIENTS[name]} |`);
  return [BEGIN, "| package | version | what |", "|---|---|---|", ...rows, END].join("\n");
}

/** The table as docs/clients.md has it now. */
export function documentedTable(): string {
  const doc = readFileSync(DOC, "utf8");
  return doc.slice(doc.indexOf(BEGIN), doc.indexOf(END) + END.length);
}

function writeTable(): void {
  const doc = readFileSync(DOC, "utf8");
  writeFileSync(DOC, doc.replace(documentedTable(), versionTable()));
}

if (import.meta.main) {
  const verb = process.argv[2];
  if (verb === "update") {
    const latest = Object.keys(CLIENTS).map((name) => `${name}@latest`);
    const npm = Bun.spawnSync(["npm", "install", "--save-dev", "--save-exact", "--no-audit", "--no-fund", ...latest], { cwd: root, stdout: "inherit", stderr: "inherit" });
    if (npm.exitCode !== 0) process.exit(npm.exitCode ?? 1);
    writeTable();
    console.log("clients updated; docs/clients.md rewritten. Now run: npm test");
  } else if (verb === "table") {
    writeTable();
  } else {
    console.error("usage: bun compile/clients.ts update | table");
    process.exit(2);
  }
}
