// The router's own store refuses writes (disk full, data dir read-only or
// gone): routing goes on, but traces, and with them usage, analytics and
// these checks' history, are lost until it takes writes again.
import { duration, fold, type HealthCheck } from "../types.ts";

/** A refusal older than this that writes have since recovered from is no longer reported. */
const RECOVERED_FOR_MS = 60 * 60_000;

export const storeWritable: HealthCheck = {
  id: "store_writable",
  name: "Store writable",
  run({ traceWrites: w, now }) {
    const error = w.lastError;
    const ok = `traces are written to ${w.file} (${w.written} since start, ${w.pruned} pruned past store.traces' retention)`;
    if (!error || (w.lastWriteAt !== null && w.lastWriteAt > error.at && now - error.at > RECOVERED_FOR_MS)) return fold([], ok);
    const failing = w.lastWriteAt === null || error.at > w.lastWriteAt;
    return fold(
      [
        failing
          ? {
              severity: "critical",
              finding: `the store refuses writes (${error.message}): ${w.lost} trace(s) lost since start; routing goes on`,
              recommendation: `free disk space on the router's machine, or make server.dataDir (${w.file}) writable by herd; traces are written again as soon as it can.`,
              details: { file: w.file, lost: w.lost, error: error.message, since: error.at / 1000 },
            }
          : {
              severity: "warning",
              finding: `${w.lost} trace(s) were lost ${duration(now - error.at)} ago (${error.message}); writes work again`,
              recommendation: `check the disk space and permissions of server.dataDir (${w.file}) before it happens again.`,
              details: { file: w.file, lost: w.lost, error: error.message, at: error.at / 1000 },
            },
      ],
      "",
    );
  },
};
