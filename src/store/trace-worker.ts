// The thread that writes traces (see TraceWriter): its own connection to the
// store, so SQLite's work never runs on the router's event loop. After each
// write (and once at open) it prunes the store to its retention (retention.ts).
import { Database } from "bun:sqlite";
import { log } from "../log.ts";
import { type Retention, tracePruner } from "./retention.ts";
import { type Trace, traceInserter, type WorkerReport } from "./traces.ts";

declare const self: Worker;

/** About what SQLite's automatic checkpoint lets the log grow to (1000 pages). */
const WAL_LIMIT_BYTES = 4 * 1024 * 1024;

let db: Database | null = null;
let insert: ReturnType<typeof traceInserter> | null = null;
let prune: ReturnType<typeof tracePruner> | null = null;
/** Traces lost since the last write that worked: the log says when writes start failing and when they work again. */
let lostSinceWrite = 0;

self.onmessage = ({ data }: MessageEvent<{ open?: string; batch?: string; keep?: Retention; close?: true }>) => {
  if (data.open) open(data.open);
  if (data.batch) write(JSON.parse(data.batch), data.keep!);
  if (data.keep) pruneTo(data.keep);
  if (data.close) {
    db?.close();
    report("closed");
  }
};

function open(file: string): void {
  try {
    db = new Database(file, { strict: true });
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA busy_timeout = 5000");
    // The write-ahead log shrinks back to this after a checkpoint instead of staying at its largest: part of what store.traces.maxMb bounds.
    db.run(`PRAGMA journal_size_limit = ${WAL_LIMIT_BYTES}`);
    insert = traceInserter(db);
    prune = tracePruner(db);
  } catch (e) {
    log.error(`cannot write traces to ${file}: ${(e as Error).message}`);
  }
}

function write(batch: Trace[], keep: Retention): void {
  try {
    if (!insert) throw new Error("the store is not open");
    insert(batch, keep.maxTagsPerDay);
    if (lostSinceWrite) log.info(`writing traces again; ${lostSinceWrite} were lost while the store refused them`);
    lostSinceWrite = 0;
    report({ wrote: batch.length });
  } catch (e) {
    // Routing must go on when the disk is full or read-only; the traces of this batch are lost, and said so.
    const message = (e as Error).message;
    if (!lostSinceWrite) log.error(`cannot write traces (${message}); routing goes on, traces are lost until the store takes them again`);
    lostSinceWrite += batch.length;
    report({ lost: batch.length, error: message });
  }
}

function pruneTo(keep: Retention): void {
  try {
    const pruned = prune?.(keep, Date.now() / 1000);
    if (pruned) report({ pruned });
  } catch (e) {
    // A store that cannot prune (disk full, locked) is tried again after the next write.
    log.warn(`cannot prune traces to store.traces' retention: ${(e as Error).message}`);
  }
}

function report(message: WorkerReport): void {
  postMessage(message);
}
