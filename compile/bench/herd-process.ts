// The compiled herd binary as a user runs it: `herd serve` in a folder of its
// own with a herd.config.json, ready once /healthz answers. Each start gets a
// fresh data dir, so no run sees another's traces, pins or queues; removed when
// it stops, unless HERD_BENCH_KEEP_DATA=1 keeps it (and herd's log beside it, herd.log) to read after.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HerdConfig } from "../../src/config/types.ts";

export interface HerdProcess {
  url: string;
  pid: number;
  /** Spawn → first 200 from /healthz. */
  readyMs: number;
  /** Its data dir (the store with its traces), gone once stopped unless HERD_BENCH_KEEP_DATA=1 (then its log is in ../herd.log). */
  dataDir: string;
  stop(): Promise<void>;
}

export async function startHerd(bin: string, config: HerdConfig, env: Record<string, string> = {}): Promise<HerdProcess> {
  const dir = mkdtempSync(join(tmpdir(), "herd-bench-"));
  // The load generators are many clients from one address, which server.clientMaxConnections exists to stop.
  writeFileSync(join(dir, "herd.config.json"), JSON.stringify({ ...config, server: { clientMaxConnections: 100_000, ...config.server } }));
  const started = performance.now();
  const proc = Bun.spawn([bin, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  const stop = async () => {
    proc.kill();
    await proc.exited;
    if (process.env.HERD_BENCH_KEEP_DATA !== "1") rmSync(dir, { recursive: true, force: true });
  };
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  let out = "";
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    out += decoder.decode(chunk.value);
    const m = out.match(/serving on (http:\/\/[\d.]+:\d+)/);
    if (!m) continue;
    const url = m[1]!;
    while (!(await fetch(`${url}/healthz`).then((r) => r.ok).catch(() => false))) await Bun.sleep(5);
    const log = process.env.HERD_BENCH_KEEP_DATA === "1" ? join(dir, "herd.log") : null;
    if (log) writeFileSync(log, out);
    void drain(reader, log); // a log nobody reads must not fill the pipe and block herd
    return { url, pid: proc.pid, readyMs: performance.now() - started, dataDir: join(dir, "data"), stop };
  }
  await stop();
  throw new Error(`herd did not start:\n${out}`);
}

async function drain(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> }, log: string | null): Promise<void> {
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) if (log && chunk.value) appendFileSync(log, chunk.value);
}

/** Resident memory of a process, in MiB. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** CPU seconds (user + system) a process has used: all its threads, or with `mainThread` its JS thread alone (the event loop's). */
export function cpuSeconds(pid: number, mainThread = false): number {
  const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields from the 3rd (state) on
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

const clockTicks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
