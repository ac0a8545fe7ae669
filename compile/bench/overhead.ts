// What herd costs in front of a node: the same load straight to a simulated
// node, through a pass-through proxy with no logic (the floor for any Bun
// router), through the least a JSON-reading router on herd's stack does (Elysia,
// the JSON parsed and written again) and through herd, compared cell by cell.
import { type Cell, loadMatrix, ROUNDS, requestLabel, type Target, WARM_UP } from "./matrix.ts";
import { startPassthrough } from "./passthrough.ts";
import { ms, pct } from "./stats.ts";

const TARGET = { addedP50: 0.3, addedP99: 2, throughput: 0.6 };

type Targets = "direct" | "proxy" | "json" | "herd" | "herd3" | "before" | "before3";

/** A herd process the bench started: where it listens, and its pid (its CPU time is counted). */
export interface Served {
  url: string;
  pid: number;
}

/**
 * The herds measured: over the one node the floors front (`herd`), over a fleet of three (`herd3`), and the same two of
 * an older binary when given.
 */
export interface Herds {
  herd: Served;
  herd3: Served;
  before?: Served;
  before3?: Served;
}

/** Direct, through the two floors and through each herd, in one matrix. */
export async function measureOverhead(simUrl: string, herds: Herds): Promise<Cell<Targets>[]> {
  const [proxy, json] = await Promise.all([startPassthrough(simUrl, "bytes"), startPassthrough(simUrl, "json")]);
  try {
    const served = (s: Served): Target => ({ url: s.url, client: "fetch", pid: s.pid });
    const targets = {
      direct: { url: simUrl, client: "fetch" },
      proxy: { url: proxy.url, client: "fetch", pid: proxy.pid },
      json: { url: json.url, client: "fetch", pid: json.pid },
      ...Object.fromEntries(Object.entries(herds).map(([name, s]) => [name, served(s)])),
    } as Record<Targets, Target>;
    return await loadMatrix(targets);
  } finally {
    await Promise.all([proxy.stop(), json.stop()]);
  }
}

export function overheadMarkdown(cells: Cell<Targets>[]): string {
  const mark = (ok: boolean) => (ok ? "✓" : "✗");
  const rows = cells.map(({ stream, clients, by: { direct, proxy, json, herd } }) => {
    const [addedP50, addedP99, share] = [herd.p50 - direct.p50, herd.p99 - direct.p99, herd.rps / direct.rps];
    return `| ${stream ? "stream" : "whole"} | ${clients} | ${ms(direct.p50)} / ${ms(direct.p99)} | ${ms(proxy.p50)} / ${ms(proxy.p99)} | ${ms(json.p50)} / ${ms(json.p99)} | ${ms(herd.p50)} / ${ms(herd.p99)} | ${ms(addedP50)} ${mark(addedP50 < TARGET.addedP50)} / ${ms(addedP99)} ${mark(addedP99 < TARGET.addedP99)} | ${proxy.p50 > direct.p50 ? ratio(addedP50, proxy.p50 - direct.p50) : "—"} | ${direct.rps.toFixed(0)} / ${proxy.rps.toFixed(0)} (${pct(proxy.rps, direct.rps)}) / ${herd.rps.toFixed(0)} (${pct(herd.rps, direct.rps)} ${mark(share >= TARGET.throughput)}) | ${direct.errors + proxy.errors + json.errors + herd.errors} |`;
  });
  const ttft = cells
    .filter((c) => c.stream)
    .map(({ clients, by: { direct, proxy, herd } }) => `| ${clients} | ${ms(direct.firstByteP50)} | ${ms(proxy.firstByteP50)} | ${ms(herd.firstByteP50)} | ${ms(herd.firstByteP50 - direct.firstByteP50)} |`);
  return `### Router overhead

${requestLabel}, to one simulated node generating 1,000,000 tokens/s (so herd's own cost shows): direct, through a pass-through
proxy with no logic (compile/bench/passthrough.ts: Bun.serve in, herd's HTTP client out, the body piped back; the floor for a router on Bun),
through the JSON floor (the same file: Elysia, the request's JSON parsed and written again, each answer line parsed and written again: the least a
router on herd's stack that reads what it relays does) and through herd (the node declared with 256 parallel slots, so herd's per-model queue never holds a request back). Each cell runs direct, the two floors and herd${cells[0]?.by.before ? " (and the older herd binary)" : ""} in turn, ${ROUNDS} rounds; each target's figures are its median round (by req/s),
so a burst of other work on this shared machine skews one round, not the comparison. Latency is request
sent → last byte, in ms; "added" is herd's percentile minus direct's. Targets (issue #3): added p50 < ${TARGET.addedP50} ms, added p99 <
${TARGET.addedP99} ms, herd ≥ ${TARGET.throughput * 100}% of direct throughput. The load generator is a separate Bun process
(compile/bench/loadgen.ts, Bun's fetch, closed loop); the simulated node runs in the bench process, the proxy and herd (the compiled
binary) each in their own, so through either three busy processes share the cores where direct has two. Before anything is
measured, each target serves ${WARM_UP.toLocaleString("en")} requests of each kind (a router runs for days; JavaScriptCore compiles hot code for its first
tens of thousands).

| body | clients | direct p50 / p99 | pass-through p50 / p99 | JSON floor p50 / p99 | herd p50 / p99 | added by herd p50 / p99 | herd's added p50 ÷ pass-through's | req/s direct / pass-through / herd | errors |
|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

CPU per request (user + system time of the serving process, all its threads, over each measured round ÷ answers, µs; the kernel counts it in 10 ms ticks, so a 1-client round of ~1,000 answers reads to ±10 µs; "main thread" is its JS thread alone, the event loop every request waits its turn on (herd's trace writer and the engine's collector run beside it); "over three nodes" is herd in front of a fleet of three simulated nodes, each with three models on disk and the asked one loaded, so each request has three candidates to rank${cells[0]?.by.before ? "; \"before\" is the older herd binary given in HERD_BENCH_BEFORE, measured in the same rounds" : ""}):

| body | clients | pass-through | JSON floor | herd |${cells[0]?.by.before ? " before | herd ÷ before |" : ""} herd ÷ pass-through | herd ÷ JSON floor | main thread: pass-through / herd (÷) | main thread, herd over three nodes (÷ pass-through) |${cells[0]?.by.before3 ? " main thread, before over three nodes (herd's ÷ before's) |" : ""}
|---|---|---|---|---|${cells[0]?.by.before ? "---|---|" : ""}---|---|---|---|${cells[0]?.by.before3 ? "---|" : ""}
${cpuRows(cells).join("\n")}
${cells[0]?.by.before ? `\nHerd against the older binary in the same rounds: added latency against direct (ms, p50 / p99) and throughput:\n\n| body | clients | herd added | before added | req/s herd / before |\n|---|---|---|---|---|\n${beforeRows(cells).join("\n")}\n` : ""}
Time to first token (streaming: request sent → first body byte), p50 in ms:

| clients | direct | pass-through | herd | added by herd |
|---|---|---|---|---|
${ttft.join("\n")}`;
}

const us = (n: number | null) => (n === null ? "—" : n.toFixed(0));
const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? "—" : `${(a / b).toFixed(2)}×`);

function cpuRows(cells: Cell<Targets>[]): string[] {
  return cells.map(({ stream, clients, by: { proxy, json, herd, herd3, before, before3 } }) => {
    const old = before ? ` ${us(before.cpuUsPerRequest)} | ${ratio(herd.cpuUsPerRequest, before.cpuUsPerRequest)} |` : "";
    const main = `${us(proxy.mainCpuUsPerRequest)} / ${us(herd.mainCpuUsPerRequest)} (${ratio(herd.mainCpuUsPerRequest, proxy.mainCpuUsPerRequest)})`;
    const three = `${us(herd3.mainCpuUsPerRequest)} (${ratio(herd3.mainCpuUsPerRequest, proxy.mainCpuUsPerRequest)})${before3 ? ` | ${us(before3.mainCpuUsPerRequest)} (${ratio(herd3.mainCpuUsPerRequest, before3.mainCpuUsPerRequest)})` : ""}`;
    return `| ${stream ? "stream" : "whole"} | ${clients} | ${us(proxy.cpuUsPerRequest)} | ${us(json.cpuUsPerRequest)} | ${us(herd.cpuUsPerRequest)} |${old} ${ratio(herd.cpuUsPerRequest, proxy.cpuUsPerRequest)} | ${ratio(herd.cpuUsPerRequest, json.cpuUsPerRequest)} | ${main} | ${three} |`;
  });
}

function beforeRows(cells: Cell<Targets>[]): string[] {
  return cells.map(
    ({ stream, clients, by: { direct, herd, before } }) =>
      `| ${stream ? "stream" : "whole"} | ${clients} | ${ms(herd.p50 - direct.p50)} / ${ms(herd.p99 - direct.p99)} | ${ms(before!.p50 - direct.p50)} / ${ms(before!.p99 - direct.p99)} | ${herd.rps.toFixed(0)} / ${before!.rps.toFixed(0)} (${pct(herd.rps, before!.rps)}) |`,
  );
}
