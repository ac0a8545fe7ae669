// The thread that writes traces (see TraceWriter): its own connection to the
// store, so SQLite's work never runs on the router's event loop.
import { Database } from "bun:sqlite";
import { log } from "../log.ts";
import { type Trace, traceInserter } from "./traces.ts";

declare const self: Worker;

let db: Database | null = null;
let insert: ((batch: Trace[]) => void) | null = null;

self.onmessage = ({ data }: MessageEvent<{ open?: string; batch?: string; close?: true }>) => {
  if (data.open) open(data.open);
  if (data.batch) write(JSON.parse(data.batch));
  if (data.close) {
    db?.close();
    postMessage("closed");
  }
};

function open(file: string): void {
  try {
    db = new Database(file, { strict: true });
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA busy_timeout = 5000");
    insert = traceInserter(db);
  } catch (e) {
    log.error(`cannot write traces to ${file}: ${(e as Error).message}`);
  }
}

function write(batch: Trace[]): void {
  try {
    if (!insert) throw new Error("the store is not open");
    insert(batch);
  } catch (e) {
    // Routing must go on when the disk is full or read-only; the traces of this batch are lost, and said so.
    log.error(`could not write ${batch.length} trace(s): ${(e as Error).message}`);
  }
}
