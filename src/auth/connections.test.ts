import { expect, test } from "bun:test";
import { parseConfig } from "../config/load.ts";
import { ClientConnections, closesAfter, type ConnectionServer } from "./connections.ts";

const conf = parseConfig({ server: { clientMaxConnections: 2, keepAliveMs: 5000 } });

/** A server whose requests are answering until `done`, with their idle timers as set. */
function fakeServer() {
  const open = new Set<Request>();
  const timers = new Map<Request, number>();
  const server: ConnectionServer = {
    requestIP: (r) => (open.has(r) ? { address: "10.0.0.1", port: 1 } : null),
    timeout: (r, s) => void timers.set(r, s),
  };
  const arrive = (body?: string) => {
    const r = body === undefined ? new Request("http://herd/healthz") : new Request("http://herd/api/chat", { method: "POST", body, headers: { "content-length": String(body.length) } });
    open.add(r);
    return r;
  };
  return { server, arrive, done: (r: Request) => open.delete(r), timers };
}

test("past the cap answering at once, a new connection's request is refused; the next request on a known one is not", () => {
  const { server, arrive } = fakeServer();
  const c = new ClientConnections();
  const from = (port: number) => ({ address: "10.0.0.1", port });
  expect(c.admit(server, arrive(), from(1), conf, 0)).toBeNull();
  expect(c.admit(server, arrive(), from(2), conf, 0)).toBeNull();
  expect(c.admit(server, arrive(), from(3), conf, 0)).toContain("too many connections from 10.0.0.1: 2 are already waiting for an answer (server.clientMaxConnections)");
  expect(c.admit(server, arrive(), from(1), conf, 0)).toBeNull();
  // Another address has its own.
  expect(c.admit(server, arrive(), { address: "10.0.0.2", port: 3 }, conf, 0)).toBeNull();
});

test("a port of a connection herd closed behind its answer is a new connection when it comes again, and counts against the cap", () => {
  const { server, arrive, done } = fakeServer();
  const c = new ClientConnections();
  const from = (port: number) => ({ address: "10.0.0.1", port });
  const unread = arrive("{}"); // refused before its body was read: its connection is closed behind the answer
  expect(c.admit(server, unread, from(1), conf, 0)).toBeNull();
  done(unread);
  expect(closesAfter(unread, false)).toBe(true);
  expect(c.admit(server, arrive(), from(2), conf, 0)).toBeNull();
  expect(c.admit(server, arrive(), from(3), conf, 0)).toBeNull();
  // The client's system gives port 1 to its next connection: two are answering, so it is refused.
  expect(c.admit(server, arrive(), from(1), conf, 0)).toContain("too many connections");
});

test("past the cap open, a new connection is answered and then closed; once the others idle past the keep-alive, it is kept again", () => {
  const { server, arrive, done } = fakeServer();
  const c = new ClientConnections();
  const from = (port: number) => ({ address: "10.0.0.1", port });
  for (const port of [1, 2]) {
    const r = arrive();
    c.admit(server, r, from(port), conf, 0);
    done(r);
  }
  const third = arrive();
  expect(c.admit(server, third, from(3), conf, 1000)).toBeNull();
  expect(closesAfter(third, false)).toBe(true);
  done(third);
  const later = arrive();
  expect(c.admit(server, later, from(4), conf, 5000 + 4000 + 1000 + 1001)).toBeNull();
  expect(closesAfter(later, false)).toBe(false);
});

test("an answer closes its connection when the request's body was not read, or failed", async () => {
  const withBody = () => new Request("http://herd/healthz", { method: "POST", body: "abc", headers: { "content-length": "3" } });
  expect(closesAfter(new Request("http://herd/healthz"), true)).toBe(false);
  expect(closesAfter(withBody(), false)).toBe(true);
  const read = withBody();
  await read.text();
  expect(closesAfter(read, false)).toBe(false);
  expect(closesAfter(read, true)).toBe(true);
});
