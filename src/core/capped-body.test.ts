import { expect, test } from "bun:test";
import { AnswerTooLarge, readCapped, responseBytes, responseJson } from "./capped-body.ts";

const CAP = { bytes: 2048, setting: "server.maxNodeAnswerMb" };
const utf8 = new TextEncoder();

/** A reader over `chunks`; says whether it was cancelled. */
function reader(chunks: string[]) {
  const state = { cancelled: false, reads: 0 };
  return {
    state,
    async read() {
      state.reads++;
      const next = chunks.shift();
      return next === undefined ? { done: true } : { done: false, value: utf8.encode(next) };
    },
    async cancel() {
      state.cancelled = true;
    },
  };
}

test("a body within the cap comes back whole, across its chunks", async () => {
  const r = reader(["{\"a\":", "1}"]);
  expect(new TextDecoder().decode(await readCapped(r, CAP))).toBe('{"a":1}');
  expect(r.state.cancelled).toBe(false);
});

test("past the cap the read stops at that chunk, the body is cancelled, and the error names the setting", async () => {
  const r = reader(["x".repeat(1024), "x".repeat(1025), "never read"]);
  const e = await readCapped(r, CAP).catch((e) => e);
  expect(e).toBeInstanceOf(AnswerTooLarge);
  expect(e.message).toBe("the node's answer ran past 2 KB (server.maxNodeAnswerMb); herd stopped reading it and dropped the connection");
  expect(r.state).toEqual({ cancelled: true, reads: 2 });
});

test("a Response that declares more than the cap is refused before any of it is read", async () => {
  const res = new Response("x".repeat(4096), { headers: { "content-length": "4096" } });
  await expect(responseBytes(res, CAP)).rejects.toBeInstanceOf(AnswerTooLarge);
});

test("a capped Response reads as JSON", async () => {
  expect(await responseJson(new Response('{"ok":1}'), { bytes: 1024, setting: "x" })).toEqual({ ok: 1 });
  expect(await responseBytes(new Response(null), CAP)).toEqual(new Uint8Array());
});
