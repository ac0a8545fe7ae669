// Connections a client holds without finishing its request, through a real router over raw
// sockets: a body that stops half-way (or drips) is cut after timeouts.requestBodyMs with a 408
// in the route's own format; one client address sending more bodies at once than
// server.clientMaxPendingBodies gets a 429 at once, each with its connection closed, so a router
// short of file descriptors still answers /healthz; headers sent too slowly are cut by Bun.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { join } from "node:path";
import { CLI, cleanupFile, startRouterProcess, tmpDir } from "./helpers.ts";

const BODY_MS = 2000;
const MAX_PENDING = 4;
/** The router's descriptors: with the stalled connections below all held open, it could accept no more. */
const FD_LIMIT = 96;
const STALLED = 120;

let router: Awaited<ReturnType<typeof startRouterProcess>>;
let port: number;

afterAll(cleanupFile);

beforeAll(async () => {
  const dir = tmpDir();
  const file = join(dir, "herd.config.json");
  writeFileSync(file, JSON.stringify({ server: { clientMaxPendingBodies: MAX_PENDING }, timeouts: { requestBodyMs: BODY_MS }, features: { autoPull: false } }));
  const serve = [process.execPath, CLI, "serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")];
  router = await startRouterProcess(["-c", `ulimit -n ${FD_LIMIT} && exec "$@"`, "sh", ...serve], { bin: "/bin/sh" });
  port = Number(new URL(router.url).port);
});

afterAll(async () => {
  await router?.stop();
});

interface Ended {
  /** Everything the router sent before it closed the connection. */
  text: string;
  ms: number;
}

/** A raw connection that sends `head` (and whatever `more` writes later); resolves once the router closes it. */
function raw(head: string, more?: (s: Socket) => void): { socket: Socket; ended: Promise<Ended> } {
  const t0 = performance.now();
  const socket = connect(port, "127.0.0.1");
  let text = "";
  const ended = new Promise<Ended>((resolve) => {
    socket.on("connect", () => {
      socket.write(head);
      more?.(socket);
    });
    socket.on("data", (d) => (text += d.toString()));
    socket.on("error", () => {});
    socket.on("close", () => resolve({ text, ms: performance.now() - t0 }));
  });
  return { socket, ended };
}

const post = (path: string, headers: string) => `POST ${path} HTTP/1.1\r\nHost: herd\r\nContent-Type: application/json\r\n${headers}\r\n`;
const halfSent = (path: string) => raw(`${post(path, "Content-Length: 200\r\n")}{"model":"llama3.2:3b","messages":[`);

function bodyOf(text: string): any {
  return JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
}

describe("a body that never completes", () => {
  test.each([
    ["/api/chat", (b: any) => b.error],
    ["/v1/chat/completions", (b: any) => b.error.message],
    ["/v1/messages", (b: any) => b.error.message],
  ])("%s: cut after timeouts.requestBodyMs with a 408 in the route's format, the connection closed", async (path, messageOf) => {
    const { text, ms } = await halfSent(path).ended;
    expect(text).toStartWith("HTTP/1.1 408");
    expect(messageOf(bodyOf(text))).toBe(`the request body did not arrive within ${BODY_MS} ms (timeouts.requestBodyMs)`);
    expect(ms).toBeGreaterThanOrEqual(BODY_MS - 20);
    expect(ms).toBeLessThan(BODY_MS + 1000);
  });

  test("a chunked body dripping a byte at a time is cut at the same bound, however busy it looks", async () => {
    let drip: Timer | undefined;
    const { ended } = raw(post("/api/chat", "Transfer-Encoding: chunked\r\n"), (s) => {
      drip = setInterval(() => s.write("1\r\n \r\n"), 100);
    });
    const { text, ms } = await ended;
    clearInterval(drip);
    expect(text).toStartWith("HTTP/1.1 408");
    expect(ms).toBeLessThan(BODY_MS + 1000);
  });
});

describe("many stalled connections from one address", () => {
  test(`past server.clientMaxPendingBodies each is refused at once with a 429 and closed: under ${FD_LIMIT} descriptors, /healthz still answers`, async () => {
    const stalled = Array.from({ length: STALLED }, () => halfSent("/api/chat"));
    const refused = await Promise.all(stalled.map((s) => Promise.race([s.ended, Bun.sleep(BODY_MS / 2).then(() => null)])));
    const quick = refused.filter((r): r is Ended => r !== null);
    expect(quick.length).toBe(STALLED - MAX_PENDING);
    for (const r of quick) {
      expect(r.text).toStartWith("HTTP/1.1 429");
      expect(bodyOf(r.text).error).toMatch(/too many requests from 127\.0\.0\.1 are still sending their bodies \(server\.clientMaxPendingBodies: 4\)/);
    }
    // The ones within the cap are still held, and the router serves everyone else meanwhile.
    const t0 = performance.now();
    const health = await fetch(`${router.url}/healthz`, { signal: AbortSignal.timeout(BODY_MS / 4) });
    expect(health.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(BODY_MS / 4);
    expect(stalled.filter((s) => !s.socket.closed).length).toBe(MAX_PENDING);
    const held = await Promise.all(stalled.map((s) => s.ended));
    expect(held.filter((r) => r.text.startsWith("HTTP/1.1 408")).length).toBe(MAX_PENDING);
  });
});

describe("headers sent too slowly", () => {
  // Bun's HTTP server closes a connection whose request line and headers have not all arrived
  // within 10 s, however steadily they drip; it has no setting, and there is no request to answer.
  test("are cut by Bun's own 10 s header timeout, the connection closed without an answer", async () => {
    let drip: Timer | undefined;
    const { ended } = raw("GET /healthz HTTP/1.1\r\n", (s) => {
      drip = setInterval(() => s.write("X-Slow: 1\r\n"), 500);
    });
    const { text, ms } = await ended;
    clearInterval(drip);
    expect(text).toBe("");
    expect(ms).toBeGreaterThan(8_000);
    expect(ms).toBeLessThan(15_000);
  }, 20_000);
});
