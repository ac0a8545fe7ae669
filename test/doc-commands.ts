// The commands README.md and docs/*.md print, read from their text, so a test runs
// what a reader copies and an edit that breaks a command fails it. A command is
// - a line of a ```sh block (its trailing `# comment` dropped; a quote left open
//   goes on to the next line; a block opening with #! is one script);
// - a `$ ` line of an unlabelled block (a session shown with its output);
// - an inline code span that starts with a program herd's docs run (herd, ./herd,
//   npm, curl, claude, codex) with an argument, or after VAR=value assignments.
// A test runs one with runLine or startLine: the line as printed, given to sh.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { herd, ROOT, spawnHerd } from "./helpers.ts";

export interface DocCommand {
  doc: string;
  command: string;
}

/** The address the docs give the router at; a test swaps in its own (see atRouter). */
export const DOC_ROUTER = "localhost:11435";

const PROGRAM = String.raw`(?:\.\/herd|herd|npm|curl|claude|codex)`;
const INLINE = new RegExp(String.raw`^(?:(?:[A-Z_]+=\S+ )+${PROGRAM}\b|${PROGRAM}\s+\S)`);

export const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** Every command in `doc` (a path from the repository's root), in the order printed. */
export function commandsIn(doc: string): DocCommand[] {
  const text = readFileSync(join(ROOT, doc), "utf8");
  const found: string[] = [];
  for (const [, lang, body] of text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)) {
    if (lang === "sh") found.push(...shellCommands(body!));
    if (lang === "") found.push(...body!.split("\n").flatMap((l) => (l.startsWith("$ ") ? [l.slice(2).trim()] : [])));
  }
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  for (const [, span] of prose.matchAll(/`([^`]+)`/g)) {
    const command = span!.replace(/\s*\n\s*/g, " ");
    if (!span!.includes("\n\n") && INLINE.test(command)) found.push(command);
  }
  return [...new Set(found)].map((command) => ({ doc, command }));
}

/** Every command of the README and docs/*.md. */
export function docCommands(): DocCommand[] {
  return DOCS.flatMap(commandsIn);
}

function shellCommands(body: string): string[] {
  if (body.startsWith("#!")) return [body.trimEnd()];
  const commands: string[] = [];
  let open = "";
  for (const line of body.split("\n")) {
    if (line.startsWith("#")) continue;
    open = open ? `${open}\n${line.trimEnd()}` : line.replace(/\s+#\s.*$/, "");
    // A single quote left open (a JSON body over several lines) goes on.
    if ((open.match(/'/g)?.length ?? 0) % 2) continue;
    if (open.trim()) commands.push(open.trim());
    open = "";
  }
  return commands;
}

/** The one command of `doc` that matches `pattern`; fails naming the doc when there is none, or more than one. */
export function printed(doc: string, pattern: RegExp): string {
  const matching = commandsIn(doc).filter((c) => pattern.test(c.command));
  if (matching.length !== 1) throw new Error(`${doc}: ${matching.length} commands match ${pattern}, expected one: ${matching.map((c) => c.command).join(" | ")}`);
  return matching[0]!.command;
}

/** `command` with the port of the router's documented address (DOC_ROUTER) swapped for that of `url`, a router on loopback; fails when the command does not name it. */
export function atRouter(command: string, url: string): string {
  if (!command.includes(DOC_ROUTER)) throw new Error(`"${command}" does not name the router at ${DOC_ROUTER}`);
  return command.replaceAll(DOC_ROUTER, `localhost:${new URL(url).port}`);
}

type LineOptions = { cwd?: string; env?: Record<string, string>; timeoutMs?: number };

/** Runs a printed line with sh, to its end (bounded as herd() is). */
export const runLine = (line: string, opts: LineOptions = {}) => herd(["-c", line], { bin: "/bin/sh", ...opts });

/** Starts a printed line that runs until stopped (a router, a stream), with sh; stopped with all it started. */
export const startLine = (line: string, opts: Omit<LineOptions, "timeoutMs"> = {}) => spawnHerd(["-c", line], { bin: "/bin/sh", group: true, ...opts });
