// What the docs name that the code must have: config key paths, the router's routes and the
// X-Fleet-*/X-Herd-* headers. Each kind is recognised by the notation the docs use for it, so
// that anything else is left alone:
// - a config key is a backticked camelCase path under one of the schema's top-level keys
//   (`routing.strategy`, `nodes[].embedding.text`, `agents.profiles.<name>.kind`, `pins["*"]`,
//   `scoring.*`), alone or with a literal value (`routing.strategy: "score"`). A snake_case
//   segment is an API field or Ollama Herd's name (`server.max_retries`), not herd's key, and a
//   last segment like `.json` is a file;
// - a route of the router is a backticked `METHOD /path`; another server's is written with its
//   host (`POST <sim>/_sim`, `GET http://127.0.0.1:PORT/health`) and is not checked here;
// - a header is any X-Fleet-… or X-Herd-… name, checked against src/ by name.
import * as v from "valibot";

type Schema = v.GenericSchema & Record<string, any>;

/** What the docs are checked against. */
export interface Facts {
  config: Schema;
  /** "METHOD /pattern", as Elysia registered them (":param", "*"). */
  routes: string[];
  /** The source text the headers must appear in. */
  source: string;
}

const FILE_EXTENSIONS = new Set(["json", "ts", "js", "md", "db", "sqlite", "yaml", "yml", "toml", "txt", "log"]);
const METHODS = "GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS";
// A segment after the first: .name, .<placeholder>, .*, [] or [index], ["key"].
const SEGMENT = String.raw`\.[A-Za-z$][\w$]*|\.<[^>]+>|\.\*|\[\w*\]|\["[^"]*"\]`;
const PATH = new RegExp(`^[A-Za-z$][\\w$]*(?:${SEGMENT})+$`);
const LITERAL = /^(?:"[^"]*"|-?\d+(?:\.\d+)?|true|false|null)$/;

/** Every problem in one doc's text, each naming what the doc says; empty when all of it holds. */
export function docProblems(text: string, facts: Facts): string[] {
  const problems: string[] = [];
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  // A code span may wrap onto the next line, never past a paragraph.
  for (const [, span] of prose.matchAll(/`([^`]+)`/g)) {
    if (span!.includes("\n\n")) continue;
    const token = span!.replace(/\s*\n\s*/g, " ");
    const key = configPath(token, facts.config);
    if (key && !walk(facts.config, key)) problems.push(`config key \`${token}\` is not in src/config/schema.ts`);
    const route = new RegExp(`^(${METHODS}) (/\\S*)`).exec(token);
    if (route && !served(facts.routes, route[1]!, route[2]!)) problems.push(`route \`${route[1]} ${route[2]}\` is not one the router serves`);
  }
  for (const [header] of text.matchAll(/\bX-(?:Fleet|Herd)-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*/g)) {
    if (!new RegExp(`${header}(?![\\w-])`, "i").test(facts.source)) problems.push(`header ${header} is never used in src/`);
  }
  return [...new Set(problems)];
}

/**
 * The token's config key path as segments ("nodes", "[]", "embedding"; "<key>" for a record's entry, "*" for every key)
 * when it is written as one (see the top of the file); else null.
 */
function configPath(token: string, config: Schema): string[] | null {
  const [path, value] = token.split(/: (.*)/s) as [string, string | undefined];
  if ((value !== undefined && !LITERAL.test(value.trim())) || !PATH.test(path)) return null;
  const [first, ...rest] = [...path.matchAll(new RegExp(`^[A-Za-z$][\\w$]*|${SEGMENT}`, "g"))].map((m) => m[0]);
  const segments = [first!, ...rest.map((s) => (s.startsWith("[\"") || s.startsWith(".<") ? "<key>" : s.startsWith("[") ? "[]" : s.slice(1)))];
  const names = segments.filter((s) => /^\w/.test(s));
  if (!Object.hasOwn(config.entries, first!) || names.some((n) => n.includes("_")) || FILE_EXTENSIONS.has(segments.at(-1)!)) return null;
  return segments;
}

/** Whether the segments name something the schema takes: a key, an array's item, a record's entry. */
function walk(schema: Schema, [segment, ...rest]: string[]): boolean {
  if (segment === undefined) return true;
  switch (schema.type) {
    case "optional":
    case "nullable":
    case "nullish":
      return walk(schema.wrapped, [segment, ...rest]);
    case "union":
      return schema.options.some((o: Schema) => walk(o, [segment, ...rest]));
    case "object":
    case "strict_object":
      if (segment === "*") return rest.length === 0;
      return Object.hasOwn(schema.entries, segment) && walk(schema.entries[segment], rest);
    case "record":
      return segment !== "[]" && (segment === "*" ? rest.length === 0 : walk(schema.value, rest));
    case "array":
      return segment === "[]" && walk(schema.item, rest);
    default:
      return false;
  }
}

/** Whether the router has `method path`: a doc's {placeholder}, :param or <placeholder> stands for a route's :param or *. */
function served(routes: string[], method: string, docPath: string): boolean {
  const path = docPath.replace(/[?#].*$/, "").replace(/\/(\{[^}]+\}|:[^/]+|<[^>]+>)/g, "/\0");
  const asked = method === "HEAD" ? "GET" : method;
  return routes.some((r) => {
    const [m, pattern] = r.split(" ") as [string, string];
    if (m !== asked) return false;
    const source = pattern.replace(/[.+?^$()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".+");
    return new RegExp(`^${source}$`).test(path);
  });
}
