// A .ts/.js config and the files it imports (relative imports, followed to the
// end): what the config's hash covers, what the live config watches, and what is
// evaluated afresh on each load — Bun caches a module by its path, so a reload
// that imported the main file again would keep the old `nodes.ts`.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";

export interface ConfigFile {
  path: string;
  text: string;
}

/** One TypeScript syntax error: `file:line:column: message`. */
export class SyntaxProblems extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("; "));
  }
}

const SCRIPT = /\.(ts|mts|js|mjs)$/;
// trimUnusedImports: an import only used as a type (`import { HerdConfig } from "./herd"`) is erased, as when Bun runs the file.
const transpiler = new Bun.Transpiler({ loader: "ts", trimUnusedImports: true });

export function isScript(path: string): boolean {
  return SCRIPT.test(path);
}

/**
 * The main file first, then every file it imports, each once. Throws SyntaxProblems with every syntax error in
 * the graph, or an Error naming a relative import that leads nowhere.
 */
export function readGraph(main: string, mainText: string): ConfigFile[] {
  const files: ConfigFile[] = [{ path: main, text: mainText }];
  const problems: string[] = [];
  for (let i = 0; i < files.length; i++) {
    const { path, text } = files[i]!;
    if (!isScript(path)) continue;
    let imports: { path: string }[];
    try {
      imports = transpiler.scanImports(text);
    } catch (e) {
      problems.push(...syntaxProblems(path, e));
      continue;
    }
    for (const { path: specifier } of imports) {
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) continue;
      const target = resolveImport(dirname(path), specifier);
      if (!target) throw new Error(`${path}: cannot find "${specifier}", which it imports`);
      if (!files.some((f) => f.path === target)) files.push({ path: target, text: readFileSync(target, "utf8") });
    }
  }
  if (problems.length) throw new SyntaxProblems(problems);
  return files;
}

/** The content hash of the graph; for a file that imports nothing, the SHA-256 of the file alone. */
export function graphHash(files: ConfigFile[]): string {
  const hasher = new Bun.CryptoHasher("sha256").update(files[0]!.text);
  const base = dirname(files[0]!.path);
  for (const f of files.slice(1)) hasher.update(`\0${relative(base, f.path)}\0${f.text}`);
  return hasher.digest("hex").slice(0, 12);
}

/** Imports the main file from a fresh copy of the graph, so every file in it is evaluated as it is now. */
export async function importGraph(files: ConfigFile[]): Promise<Record<string, unknown>> {
  const root = commonDir(files.map((f) => f.path));
  const copy = mkdtempSync(join(tmpdir(), "herd-config-"));
  try {
    for (const f of files) {
      const to = join(copy, relative(root, f.path));
      cpSync(f.path, to);
    }
    // A package the config imports is found from the copy as from the original.
    const modules = nearestNodeModules(root);
    if (modules) symlinkSync(modules, join(copy, "node_modules"), "dir");
    try {
      return await import(join(copy, relative(root, files[0]!.path)));
    } catch (e) {
      // Errors name the copy; the user knows the original.
      if (e instanceof Error) e.message = e.message.replaceAll(copy, root);
      throw e;
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

function syntaxProblems(path: string, e: unknown): string[] {
  const list = (e as { errors?: unknown[] }).errors ?? [e];
  return list.map((item) => {
    const { message, position } = item as { message: string; position?: { line: number; column: number } | null };
    return position ? `${path}:${position.line}:${position.column}: ${message}` : `${path}: ${message}`;
  });
}

// As Bun resolves a relative import: the exact file, a TypeScript file for a `.js` specifier, an extension, an index.
function resolveImport(from: string, specifier: string): string | null {
  const base = resolve(from, specifier.replace(/[?#].*$/, ""));
  const candidates = [base, base.replace(/\.js$/, ".ts"), base.replace(/\.mjs$/, ".mts"), ...[".ts", ".js", ".mts", ".mjs", ".json"].map((x) => base + x), join(base, "index.ts"), join(base, "index.js")];
  return candidates.find((p) => existsSync(p) && statSync(p).isFile()) ?? null;
}

function commonDir(paths: string[]): string {
  let dir = dirname(paths[0]!);
  while (!paths.every((p) => p.startsWith(dir.endsWith(sep) ? dir : dir + sep))) dir = dirname(dir);
  return dir;
}

function nearestNodeModules(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, "node_modules"))) return join(d, "node_modules");
    if (dirname(d) === d) return null;
  }
}
