// The router's memory through a burst of bad input: the fuzz's 10,000 seeded requests (test/fuzz-cases.ts)
// against the compiled binary, RSS read at idle, once every route has answered, at the burst's end, and
// settled (the idle shrink comes a few seconds after a burst: src/core/idle-shrink.ts).
import { startSimOllama } from "../../src/sim/index.ts";
import { FUZZ_MODELS, appRoutes, fuzzConfig, fuzzSequence, sendAll, wellFormed } from "../../test/fuzz-cases.ts";
import { rssMb, startHerd } from "./herd-process.ts";

export const FUZZ_CASES = 10_000;
const SETTLE_MS = 8000;

export interface FuzzMemory {
  idleMiB: number;
  servedMiB: number;
  burstMiB: number;
  settledMiB: number;
  seconds: number;
}

export async function measureFuzzMemory(bin: string): Promise<FuzzMemory> {
  const sim = await startSimOllama({ id: "n1", models: FUZZ_MODELS, loaded: FUZZ_MODELS, tokensPerSecond: 1_000_000, loadTimeMs: 0 });
  const herd = await startHerd(bin, fuzzConfig(sim.url));
  try {
    const routes = await appRoutes();
    await Bun.sleep(2000);
    const idleMiB = rssMb(herd.pid);
    await sendAll(wellFormed(routes, herd.url), 12);
    await Bun.sleep(SETTLE_MS);
    const servedMiB = rssMb(herd.pid);
    const began = performance.now();
    await sendAll(fuzzSequence()(FUZZ_CASES, routes, herd.url), 12);
    const seconds = (performance.now() - began) / 1000;
    const burstMiB = rssMb(herd.pid);
    await Bun.sleep(SETTLE_MS);
    return { idleMiB, servedMiB, burstMiB, settledMiB: rssMb(herd.pid), seconds };
  } finally {
    await herd.stop();
    await sim.stop();
  }
}

export function fuzzMemoryRow(f: FuzzMemory): string {
  return `| RSS through ${FUZZ_CASES.toLocaleString("en")} seeded fuzz requests (${f.seconds.toFixed(0)} s): idle → every route answered once → burst's end → ${SETTLE_MS / 1000} s later | ${f.idleMiB.toFixed(0)} → ${f.servedMiB.toFixed(0)} → ${f.burstMiB.toFixed(0)} → ${f.settledMiB.toFixed(0)} MiB |`;
}
