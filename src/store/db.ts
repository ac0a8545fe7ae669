// The SQLite store: one file in the data dir, WAL so readers never block the
// writer, and numbered migrations recorded in schema_migrations.
import { Database, type SQLQueryBindings } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import { log } from "../log.ts";
import { migrations } from "./migrations.ts";

export const STORE_FILE = "herd.sqlite";

export function openStore(dataDir: string): Database {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, STORE_FILE);
  // Traces say who asked what: only this user may read them. SQLite gives the -wal and -shm
  // files the main file's mode; ones left wider by an older herd are tightened.
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if (existsSync(f)) chmodSync(f, 0o600);
    } catch (e) {
      log.warn(`cannot make ${f} private to this user (${(e as Error).message})`);
    }
  }
  const db = new Database(file, { create: true, strict: true });
  // First: switching to WAL takes a lock too, and another connection to the file (the trace thread's, a tool's, one
  // still closing) must make it wait, not fail at once with "database is locked".
  db.run("PRAGMA busy_timeout = 5000");
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = NORMAL");
  migrate(db);
  return db;
}

/** Brings `db` to the newest schema: each migration it has not had, in order (an empty in-memory store for tests, too). */
export function migrate(db: Database): void {
  db.run("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)");
  const applied = new Set(db.query<{ version: number }, []>("SELECT version FROM schema_migrations").all().map((r) => r.version));
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.run(m.sql);
      db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, Date.now() / 1000]);
    })();
  }
}

/**
 * A write whose loss is bearable (a row of an event log): a store that refuses it (disk full, data dir
 * read-only) is logged, not thrown, so the caller (a poll, a reload) goes on. The store_writable check
 * reports the store's state.
 */
export function recordEvent(db: Database, sql: string, params: SQLQueryBindings[]): void {
  try {
    db.run(sql, params);
  } catch (e) {
    log.warn(`not recorded in the store (${(e as Error).message}): ${sql.slice(0, 40)}…`);
  }
}

/** What the store holds: its files' bytes on disk (the main file and its write-ahead log), the traces kept and the oldest one's time. */
export function storeSize(db: Database): { bytes: number; traces: number; oldest: number | null } {
  const bytes = [db.filename, `${db.filename}-wal`].reduce((sum, f) => sum + (existsSync(f) ? statSync(f).size : 0), 0);
  const { traces, oldest } = db.query<{ traces: number; oldest: number | null }, []>("SELECT COUNT(*) AS traces, MIN(timestamp) AS oldest FROM traces").get()!;
  return { bytes, traces, oldest };
}
