// Turns valibot issues into one line each that names the path and what to do:
//   nodes[1].ollama: expected a URL like http://10.0.0.2:11434, got "studio"
//   server.prot: unknown key; did you mean "port"?
import * as v from "valibot";
import { echoed } from "../core/printable.ts";

type Issue = v.BaseIssue<unknown>;
type AnySchema = v.GenericSchema & { entries?: v.ObjectEntries; wrapped?: AnySchema; item?: AnySchema; value?: AnySchema };

export function formatIssues(issues: readonly Issue[], root: AnySchema): string[] {
  return issues.map((issue) => {
    const keys = (issue.path ?? []).map((p) => p.key as string | number);
    const where = formatPath(keys) || "(config)";
    if (issue.type === "strict_object" && issue.expected === "never") {
      const known = knownKeysAt(root, keys.slice(0, -1));
      const hint = nearest(String(keys.at(-1)), known);
      return `${where}: unknown key${hint ? `; did you mean "${hint}"?` : known.length ? `; known keys: ${known.join(", ")}` : ""}`;
    }
    if (issue.kind === "schema" && issue.received === "undefined" && keys.length) return `${where}: required`;
    const got = echoed(LENGTH_CHECKS.has(issue.type) ? shown(issue.input) : issue.received);
    // valibot's own messages start with "Invalid"; ours already say what is expected.
    if (!issue.message.startsWith("Invalid")) return `${where}: ${issue.message}, got ${got}`;
    return `${where}: expected ${describe(issue.expected)}, got ${got}`;
  });
}

/**
 * A problem as a running router says it (its log, /healthz, the health page): without the value it got, which may be a
 * secret put in the wrong field. `herd check-config`, which the file's author runs, keeps it.
 */
export function withoutValue(problem: string): string {
  return problem.replace(/, got [\s\S]*$/, "");
}

// valibot reports a length check with the length it received ("got 0"); the value itself says more.
const LENGTH_CHECKS = new Set(["non_empty", "min_length", "max_length", "length"]);

function shown(value: unknown): string {
  if (typeof value === "string") return value ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : "an empty string";
  if (Array.isArray(value)) return value.length ? `a list of ${value.length}` : "an empty list";
  return String(value);
}

export function formatPath(keys: readonly (string | number)[]): string {
  return keys
    .map((k, i) => (typeof k === "number" ? `[${k}]` : /^[A-Za-z_$][\w$]*$/.test(k) ? (i ? `.${echoed(k)}` : echoed(k)) : `[${echoed(JSON.stringify(k))}]`))
    .join("");
}

function describe(expected: string | null): string {
  if (!expected) return "a value";
  if (expected === "Object") return "an object";
  if (expected === "Array") return "a list";
  if (expected.startsWith("<=")) return `at most ${expected.slice(2)}`;
  if (expected.startsWith(">=")) return `at least ${expected.slice(2)}`;
  return expected.replaceAll(/\b(string|number|boolean)\b/g, "a $1").replaceAll(" | ", " or ");
}

// Walks the schema along the path to list the keys a user could have meant.
function knownKeysAt(schema: AnySchema | undefined, keys: readonly (string | number)[]): string[] {
  let s = unwrap(schema);
  for (const k of keys) {
    if (!s) return [];
    if (typeof k === "number") s = unwrap(s.item);
    else s = unwrap(s.entries ? (s.entries[k] as AnySchema) : s.value);
  }
  return s?.entries ? Object.keys(s.entries) : [];
}

function unwrap(s: AnySchema | undefined): AnySchema | undefined {
  while (s?.wrapped) s = s.wrapped;
  return s;
}

/** The candidate closest to `word`, if it is close enough to be a plausible typo. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
