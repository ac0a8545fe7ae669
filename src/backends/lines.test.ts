import { expect, test } from "bun:test";
import { readLineBatches } from "./lines.ts";

const utf8 = new TextEncoder();

/** A reader that hands out `chunks` one read at a time, each after `delayMs`; cancelled, its reads are done. */
function reader(chunks: (string | Uint8Array)[], delayMs = 0) {
  let cancelled = false;
  return {
    async read() {
      if (delayMs) await Bun.sleep(delayMs);
      const next = chunks.shift();
      if (cancelled || next === undefined) return { done: true };
      return { done: false, value: typeof next === "string" ? utf8.encode(next) : next };
    },
    async cancel() {
      cancelled = true;
    },
  };
}

async function batches(r: ReturnType<typeof reader>, limits = { idleMs: 1000, maxLineBytes: 1024 }) {
  const out: string[][] = [];
  for await (const b of readLineBatches(r, limits)) out.push(b);
  return out;
}

test("lines split across reads, a character split between two of them included, come out whole", async () => {
  const bytes = utf8.encode('{"a":"é"}\n');
  const at = bytes.indexOf(0xc3) + 1; // inside é
  expect(await batches(reader([bytes.subarray(0, at), bytes.subarray(at), '{"b":1}\n{"c"', ":2}\n\n"]))).toEqual([['{"a":"é"}'], ['{"b":1}'], ['{"c":2}']]);
});

test("an unended rest is a line when it is whole JSON, and a cut otherwise", async () => {
  expect(await batches(reader(['{"a":1}\n{"error":"x"}']))).toEqual([['{"a":1}'], ['{"error":"x"}']]);
  await expect(batches(reader(['{"a":1}\n{"b":']))).rejects.toThrow("mid-line (5 bytes after the last whole line)");
});

test("a line longer than the cap is refused as soon as it passes it, ended or not", async () => {
  await expect(batches(reader(["x".repeat(600), "x".repeat(600)]))).rejects.toThrow("a line of more than 1024 bytes");
  await expect(batches(reader([`${"x".repeat(1100)}\n`]))).rejects.toThrow("a line of more than 1024 bytes");
  expect(await batches(reader([`${"x".repeat(1000)}\n`]))).toEqual([["x".repeat(1000)]]);
});

test("bytes dripped without a newline are no progress: the idle limit runs from the last whole line", async () => {
  const drip = reader(["{}\n", ...Array.from({ length: 100 }, () => "x")], 10);
  const t0 = performance.now();
  await expect(batches(drip, { idleMs: 100, maxLineBytes: 1024 })).rejects.toThrow("no whole line from the node for 100 ms");
  expect(performance.now() - t0).toBeLessThan(500);
});
