// Secrets in the config: a literal, `{ env: "VAR" }` or `{ file: "path" }`, so
// a herd.config.ts kept in git never has to hold one. A Secret prints as a mask
// whatever serialises it (JSON, logs), so a config dumped anywhere leaks nothing.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import * as v from "valibot";
import { formatPath } from "../problems.ts";

export type SecretSource = string | { env: string } | { file: string };

export const MASK = "••••";

export class Secret {
  #value: string | null = null;
  // Private, as the value: a literal source is the secret itself, and nothing that walks an object may see it.
  readonly #source: SecretSource;

  constructor(source: SecretSource) {
    this.#source = source;
  }

  /** Where the value comes from, safe to show: `env HERD_ADMIN_TOKEN`, `file /run/secrets/herd`, `literal`. */
  get origin(): string {
    const s = this.#source;
    return typeof s === "string" ? "literal" : "env" in s ? `env ${s.env}` : `file ${s.file}`;
  }

  /** The environment variable it is read from, if it is. */
  get envName(): string | null {
    const s = this.#source;
    return typeof s === "object" && "env" in s ? s.env : null;
  }

  /** The value, or null while it could not be read (see resolve). */
  get value(): string | null {
    return this.#value;
  }

  /** Reads the value (a relative file path is relative to `baseDir`); returns why it cannot, or null. */
  resolve(baseDir: string): string | null {
    const s = this.#source;
    let raw: string;
    if (typeof s === "string") raw = s;
    else if ("env" in s) {
      const found = process.env[s.env];
      if (found === undefined) return `environment variable ${s.env} is not set`;
      raw = found;
    } else {
      const path = s.file === "~" || s.file.startsWith("~/") ? resolve(homedir(), s.file.slice(2)) : isAbsolute(s.file) ? s.file : resolve(baseDir, s.file);
      try {
        raw = readFileSync(path, "utf8");
      } catch (e) {
        return `cannot read secret file ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
      }
    }
    // Files usually end with a newline that is not part of the secret.
    const value = raw.trim();
    if (!value) return `${this.origin} is empty`;
    this.#value = value;
    return null;
  }

  toJSON(): string {
    return MASK;
  }

  toString(): string {
    return MASK;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `Secret(${this.origin})`;
  }
}

const envName = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected an environment variable name"));
const path = v.pipe(v.string(), v.trim(), v.nonEmpty("expected a file path"));

/** A secret field of the config; parsing gives an unresolved Secret (see resolveSecrets). */
export const secretSchema = v.pipe(
  v.union(
    [v.pipe(v.string(), v.nonEmpty("expected a non-empty string")), v.strictObject({ env: envName }), v.strictObject({ file: path })],
    'expected a string, { env: "VAR" } or { file: "path" }',
  ),
  v.transform((source) => new Secret(source)),
);

/** A URL without any user:password@ in it: what a read API, a log line or a page shows of any address. */
export function withoutCredentials<T extends string | null | undefined>(url: T): T {
  if (!url || !URL.canParse(url)) return url;
  const u = new URL(url);
  if (!u.username && !u.password) return url;
  u.username = u.password = "";
  return u.toString().replace(/\/$/, "") as T;
}

/** What the walks below read of a valibot schema. */
interface SchemaNode {
  wrapped?: SchemaNode;
  entries?: Record<string, SchemaNode>;
  item?: SchemaNode;
  value?: SchemaNode;
}

/** Whether a config schema (through its optional wrapper) is a secret field: the one mark a secret has. */
export function isSecretField(schema: unknown): boolean {
  let s = schema as SchemaNode | undefined;
  while (s && s !== (secretSchema as SchemaNode) && s.wrapped) s = s.wrapped;
  return s === (secretSchema as SchemaNode);
}

/**
 * `value` as its config `schema` types it, with every secret field in it, however deep (a list of client keys,
 * say), shown as MASK: by the schema, never by a field's name. A Secret the schema does not mark is masked too.
 */
export function maskSecrets(schema: unknown, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (isSecretField(schema) || value instanceof Secret) return MASK;
  // Any address the config holds may carry a user:password@ (a node's Ollama behind a proxy, an OTLP collector).
  if (typeof value === "string") return withoutCredentials(value);
  let s = schema as SchemaNode;
  while (s.wrapped) s = s.wrapped;
  const each = (item: SchemaNode | undefined, v: unknown) => maskSecrets(item ?? {}, v);
  if (Array.isArray(value)) return value.map((v) => each(s.item, v));
  if (typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, each(s.entries ? s.entries[k] : s.value, v)]));
  }
  return value;
}

/** Resolves every Secret in a parsed config; one problem per secret that cannot be read, naming its path. */
export function resolveSecrets(config: unknown, baseDir: string): string[] {
  const problems: string[] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (value instanceof Secret) {
      const problem = value.resolve(baseDir);
      if (problem) problems.push(`${formatPath(path)}: ${problem}`);
    } else if (Array.isArray(value)) value.forEach((item, i) => walk(item, [...path, i]));
    else if (value && typeof value === "object") for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
  };
  walk(config, []);
  return problems;
}
