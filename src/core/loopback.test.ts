import { expect, test } from "bun:test";
import { isLoopback } from "./loopback.ts";

test("every spelling of loopback, and nothing else", () => {
  expect(["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"].every(isLoopback)).toBe(true);
  expect(["0.0.0.0", "::", "10.0.0.2", "studio.local", "128.0.0.1", "::ffff:10.0.0.2", "localhost.example"].some(isLoopback)).toBe(false);
});
