// What a user of the binary feels before any request: its size, how soon it is
// ready, its memory at idle and through a burst of bad input.
import { statSync } from "node:fs";
import type { HerdConfig } from "../../src/config/types.ts";
import { rssMb, startHerd } from "./herd-process.ts";
import { ms, percentile, sorted } from "./stats.ts";

export const STARTS = 5;
export const IDLE_MS = 3000;

export interface BinaryFacts {
  sizeMiB: number;
  readyMs: number;
  rssMiB: number;
}

/** Started STARTS times: the median time to ready; on the first start, its memory at idle, then `afterIdle` (more measures of that process). */
export async function measureBinary(bin: string, config: HerdConfig, afterIdle?: (herd: Awaited<ReturnType<typeof startHerd>>) => Promise<void>): Promise<BinaryFacts> {
  const ready: number[] = [];
  let rssMiB = 0;
  for (let i = 0; i < STARTS; i++) {
    const herd = await startHerd(bin, config);
    ready.push(herd.readyMs);
    if (i === 0) {
      await Bun.sleep(IDLE_MS);
      rssMiB = rssMb(herd.pid);
      await afterIdle?.(herd);
    }
    await herd.stop();
  }
  return { sizeMiB: statSync(bin).size / 1024 ** 2, readyMs: percentile(sorted(ready), 0.5), rssMiB };
}

/** `fuzz`: the table's last row, the memory through a burst of bad input (fuzz-memory.ts). */
export function binaryMarkdown(target: string, f: BinaryFacts, fuzz: string): string {
  return `### The binary

| measure | value |
|---|---|
| binary size (${target}) | ${f.sizeMiB.toFixed(1)} MiB |
| time to ready (spawn → /healthz 200), median of ${STARTS} | ${ms(f.readyMs)} ms |
| RSS at idle, ${IDLE_MS / 1000} s after ready, one agentless node | ${f.rssMiB.toFixed(1)} MiB |
${fuzz}`;
}
