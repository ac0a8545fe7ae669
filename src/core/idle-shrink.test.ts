import { expect, test } from "bun:test";
import { type Machine, SHRINK_TICK_MS, shrinkPolicy } from "./idle-shrink.ts";

const MB = 1024 * 1024;

/** A process whose CPU and memory the test sets; a shrink gives back all but `kept` above 100 MB. */
function fakeMachine() {
  const m = { cpu: 0, rss: 100 * MB, kept: 4 * MB, shrinks: 0 };
  const machine: Machine = { cpuMicros: () => m.cpu, rssBytes: () => m.rss, shrink: () => ((m.rss = 100 * MB + m.kept), m.shrinks++) };
  return { m, tick: shrinkPolicy(machine, () => IDLE_TICKS * SHRINK_TICK_MS) };
}
const IDLE_TICKS = 3;
const busyTick = SHRINK_TICK_MS * 1000 * 0.5; // half a core

/** Ticks `n` idle ticks, each of which must not shrink. */
function idleFor(tick: () => boolean, n: number) {
  for (let i = 0; i < n; i++) expect(tick()).toBe(false);
}

test("a burst that grew memory is given back once the process has been idle IDLE_TICKS ticks, and only once", () => {
  const { m, tick } = fakeMachine();
  m.cpu += busyTick;
  m.rss += 60 * MB;
  expect(tick()).toBe(false); // busy
  idleFor(tick, IDLE_TICKS - 1);
  expect(tick()).toBe(true);
  expect(m.rss).toBe(104 * MB);
  for (let i = 0; i < 5; i++) expect(tick()).toBe(false); // nothing grew since
  expect(m.shrinks).toBe(1);
});

test("no shrink while busy, nor when memory grew less than is worth it", () => {
  const { m, tick } = fakeMachine();
  m.rss += 60 * MB;
  for (let i = 0; i < 5; i++) {
    m.cpu += busyTick;
    expect(tick()).toBe(false);
  }
  m.rss = 106 * MB;
  idleFor(tick, IDLE_TICKS + 5);
  expect(m.shrinks).toBe(0);
});

test("what a shrink gives back shows later: the next burst is measured from the least memory seen since", () => {
  const { m, tick } = fakeMachine();
  m.kept = 50 * MB; // the pages come back only a tick after the shrink
  m.rss += 60 * MB;
  idleFor(tick, IDLE_TICKS - 1);
  expect(tick()).toBe(true);
  m.rss = 110 * MB; // given back now
  expect(tick()).toBe(false);
  m.cpu += busyTick;
  m.rss += 40 * MB;
  tick(); // busy
  idleFor(tick, IDLE_TICKS - 1);
  expect(tick()).toBe(true);
  expect(m.shrinks).toBe(2);
});

test("server.idleShrinkMs 0: never", () => {
  const m = { cpu: 0, rss: 200 * MB };
  const tick = shrinkPolicy({ cpuMicros: () => m.cpu, rssBytes: () => m.rss, shrink: () => expect.unreachable() }, () => 0);
  m.rss += 100 * MB;
  for (let i = 0; i < 10; i++) expect(tick()).toBe(false);
});
