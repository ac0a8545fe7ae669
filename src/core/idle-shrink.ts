// After a burst of requests the JS engine keeps the memory it grew to — compiled code, and freed pages it
// holds for reuse: 73 → 125 MB after 2,400 fuzz requests, still 123 MB a minute later, and a full GC gives
// back next to nothing. Bun.shrink() (drops compiled code, returns free pages to the system) does. It runs
// only once the process has been idle a few seconds (its CPU, not its open connections: a dashboard keeps an
// event stream open), and only when memory grew since the last time, so a busy router never pays for it
// and an idle one pays once. The price is real: the code it drops is compiled again by the next requests (the
// overhead bench measured twice the CPU per request for a while after a shrink), so it waits for a real idle
// spell (server.idleShrinkMs, a minute), never the pause between two bursts of traffic.

import { releaseIdleCounter } from "./tokens.ts";

/** How often the process looks at its CPU and memory. */
export const SHRINK_TICK_MS = 1000;
/** Idle: under this share of one core over a tick. */
const IDLE_CPU_SHARE = 0.05;
/** Growth since the last shrink (or the start) that is worth giving back. */
const GROWTH_BYTES = 8 * 1024 * 1024;

export interface Machine {
  cpuMicros(): number;
  rssBytes(): number;
  shrink(): void;
}

const bun: Machine = {
  cpuMicros: () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  },
  rssBytes: () => process.memoryUsage.rss(),
  shrink: () => {
    // The token counter's thread holds a heap of its own, which Bun.shrink() does not reach: idle, it goes.
    releaseIdleCounter();
    Bun.shrink();
  },
};

/** The decision, one tick at a time: true when this tick should shrink. */
/** `idleMs()`: how long the process must be idle first (read each tick: a reload changes it); 0: never. */
export function shrinkPolicy(machine: Machine, idleMs: () => number, tickMs = SHRINK_TICK_MS) {
  let cpu = machine.cpuMicros();
  // The least memory seen since the last shrink: what a shrink gives back shows a tick or two after it.
  let floor = machine.rssBytes();
  let idle = 0;
  return (): boolean => {
    const now = machine.cpuMicros();
    const rss = machine.rssBytes();
    idle = now - cpu < IDLE_CPU_SHARE * tickMs * 1000 ? idle + 1 : 0;
    cpu = now;
    floor = Math.min(floor, rss);
    const wait = idleMs();
    if (wait <= 0 || idle * tickMs < wait || rss < floor + GROWTH_BYTES) return false;
    machine.shrink();
    floor = machine.rssBytes();
    cpu = machine.cpuMicros(); // the shrink's own work is no activity
    idle = 0;
    return true;
  };
}

/** Shrinks the process's memory when it is idle after a burst; stop() ends it. */
export function startIdleShrink(idleMs: () => number, machine: Machine = bun): { stop(): void } {
  const tick = shrinkPolicy(machine, idleMs);
  const timer = setInterval(tick, SHRINK_TICK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
