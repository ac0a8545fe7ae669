// Connections a client holds without finishing its request, through a real router over raw
// sockets: a body that stops half-way (or drips) is cut after timeouts.requestBodyMs with a 408
// in the route's own format; one client address sending more bodies at once than
// server.clientMaxPendingBodies gets a 429 at once, each with its connection closed, so a router
// short of file descriptors still answers /healthz; headers sent too slowly are cut by Bun.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, writeFileSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { join } from "node:path";
import { CLI, cleanupFile, eventually, standInOllama, startRouterProcess, tmpDir } from "./helpers.ts";

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

// Connections held open without a request in progress (issue 27, item 9): idle keep-alive connections, ones whose
// body herd never reads, and many from one address, against a router short of file descriptors (ulimit -n 96) over a
// node that never answers, so a chat holds its connection for as long as herd lets it. The router's descriptors are
// counted in /proc/<pid>/fd; 127.0.0.2 (loopback too, on Linux) is another client.
describe("connections held open", () => {
  const CAP = 16;
  const KEEP_ALIVE_MS = 5000;
  const KEY = "sk-connections-0123456789";
  const MANY = 120; // more than the router's descriptors
  let node: ReturnType<typeof Bun.serve>;
  let release = () => {};
  const descriptors = () => readdirSync(`/proc/${bounded.proc.pid}/fd`).length;
  let bounded: Awaited<ReturnType<typeof startRouterProcess>>;
  let boundedPort: number;
  /** The router's descriptors before any client: its store, its listener, its poll's connection to the node. */
  let idleDescriptors: number;

  beforeAll(async () => {
    const never = new Promise<void>((resolve) => (release = resolve));
    node = standInOllama({
      models: ["m:1b"],
      async answer(req, path) {
        if (path !== "/api/chat") return null;
        // "slow": a first line, then silent for longer than the keep-alive and Bun's slack (a tool call Ollama holds back), then the rest.
        if ((await req.text()).includes('"slow"')) {
          const line = (content: string, done: boolean) => `${JSON.stringify({ model: "m:1b", message: { role: "assistant", content }, done, ...(done ? { done_reason: "stop" } : {}) })}\n`;
          let sent = 0;
          const body = new ReadableStream<Uint8Array>({
            async pull(c) {
              if (sent++ === 0) return c.enqueue(new TextEncoder().encode(line("thinking... ", false)));
              await Bun.sleep(KEEP_ALIVE_MS + 6000);
              c.enqueue(new TextEncoder().encode(line("at last", true)));
              c.close();
            },
          });
          return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
        }
        await never;
        return null;
      },
    });
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    writeFileSync(
      file,
      JSON.stringify({
        server: { clientMaxConnections: CAP, keepAliveMs: KEEP_ALIVE_MS },
        auth: { clients: [{ name: "client", key: KEY }] },
        nodes: [{ id: "n1", ollama: `http://127.0.0.1:${node.port}`, parallel: 64 }],
        timeouts: { firstByteMs: 30_000 },
        features: { autoPull: false },
      }),
    );
    const serve = [process.execPath, CLI, "serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")];
    bounded = await startRouterProcess(["-c", `ulimit -n ${FD_LIMIT} && exec "$@"`, "sh", ...serve], { bin: "/bin/sh" });
    boundedPort = Number(new URL(bounded.url).port);
    idleDescriptors = descriptors();
  });

  afterAll(async () => {
    release();
    await bounded?.stop();
    node?.stop(true);
  });

  /** A raw connection to the bounded router from `from` (another loopback address is another client): what it got, and when it closed. */
  function client(head: string, from = "127.0.0.1") {
    const t0 = performance.now();
    const socket = connect({ port: boundedPort, host: "127.0.0.1", localAddress: from });
    let text = "";
    const answered = new Promise<string>((resolve) => socket.on("data", (d) => ((text += d.toString()), /\r\n\r\n/.test(text) && resolve(text))));
    const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now() - t0)));
    socket.on("error", () => {});
    socket.on("connect", () => socket.write(head));
    return { socket, answered, closed, text: () => text };
  }
  /** The connections a test opened: closed after it, whatever it found. */
  const opened: ReturnType<typeof client>[] = [];
  afterEach(() => {
    for (const c of opened.splice(0)) c.socket.destroy();
  });
  const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, Bun.sleep(ms).then(() => null)]);
  const healthz = "GET /healthz HTTP/1.1\r\nHost: herd\r\n\r\n";
  const chat = (key: string, content = "hi") => {
    const body = JSON.stringify({ model: "m:1b", messages: [{ role: "user", content }] });
    return `POST /api/chat HTTP/1.1\r\nHost: herd\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  };
  /** /healthz from another client address answers at once. */
  async function othersServed() {
    const other = client(healthz, "127.0.0.2");
    expect(await within(other.answered, 2000)).toStartWith("HTTP/1.1 200");
    other.socket.destroy();
  }

  test(`an idle keep-alive connection is closed after server.keepAliveMs (${KEEP_ALIVE_MS} ms); a stream whose node is silent for longer is not cut`, async () => {
    const idle = Array.from({ length: 8 }, () => client(healthz));
    const waiting = client(chat(KEY, "slow"));
    opened.push(...idle, waiting);
    for (const c of idle) expect(await c.answered).toStartWith("HTTP/1.1 200");
    const closedAfter = await Promise.all(idle.map((c) => within(c.closed, KEEP_ALIVE_MS + 8000)));
    for (const ms of closedAfter) {
      expect(ms).not.toBeNull();
      expect(ms!).toBeGreaterThan(KEEP_ALIVE_MS - 500);
    }
    // herd's own timeouts bound a request it answers: the node's silence past the keep-alive did not cut its stream.
    expect(await within(waiting.answered, 1000)).toStartWith("HTTP/1.1 200");
    await eventually(async () => waiting.text().includes("at last"), 8000, "the rest of the stream");
  }, 30_000);

  test("a refused request's connection is closed behind its answer, its body unread; so is one whose route reads no body", async () => {
    const refused = Array.from({ length: 20 }, () => client(`POST /api/chat HTTP/1.1\r\nHost: herd\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"model":`));
    const unread = client(`GET /healthz HTTP/1.1\r\nHost: herd\r\nContent-Length: 1000\r\n\r\nabc`);
    for (const c of refused) {
      expect(await c.answered).toStartWith("HTTP/1.1 401");
      expect(await within(c.closed, 1000)).not.toBeNull();
    }
    expect(await unread.answered).toStartWith("HTTP/1.1 200");
    expect(await within(unread.closed, 1000)).not.toBeNull();
  });

  test(`${MANY} connections from one address waiting for answers: past server.clientMaxConnections (${CAP}) each is refused with a 429 and closed, under ${FD_LIMIT} descriptors`, async () => {
    // The last tests' connections gone first: one still counted as waiting from this address when the burst begins, and
    // closed during it, would let one more in than the cap.
    await eventually(async () => descriptors() <= idleDescriptors + 2, 5000, "the last tests' connections gone");
    const before = descriptors();
    const waiting = Array.from({ length: MANY }, () => client(chat(KEY)));
    opened.push(...waiting);
    // The admitted ones never answer (the node holds them): the wait is the bound for the refusals, generous for a loaded machine.
    const refused = (await Promise.all(waiting.map((c) => within(c.answered, 6000)))).filter((t): t is string => t !== null);
    expect(refused.length, `answers: ${[...new Set(refused.map((t) => t.split("\r\n")[0]))].join(", ")}`).toBe(MANY - CAP);
    for (const text of refused) {
      expect(text).toStartWith("HTTP/1.1 429");
      expect(bodyOf(text).error).toContain(`too many connections from 127.0.0.1: ${CAP} are already waiting for an answer (server.clientMaxConnections)`);
    }
    await eventually(async () => waiting.filter((c) => c.socket.closed).length === MANY - CAP, 2000, "the refused connections closed");
    // Each chat still waiting holds two: its client's, and its call to the node.
    expect(descriptors()).toBeLessThanOrEqual(before + 2 * CAP + 4);
    await othersServed();
  }, 20_000);

  test(`${MANY} idle connections from one address: past ${CAP} each is answered and closed, so the router keeps its descriptors and serves everyone`, async () => {
    await eventually(async () => descriptors() <= idleDescriptors + 2, 5000, "the last test's connections gone");
    const before = descriptors();
    const idle: ReturnType<typeof client>[] = [];
    for (let i = 0; i < MANY; i++) {
      const c = client(healthz);
      idle.push(c);
      opened.push(c);
      expect(await within(c.answered, 2000)).toStartWith("HTTP/1.1 200");
    }
    await eventually(async () => idle.filter((c) => c.socket.closed).length >= MANY - CAP, 2000, "the connections past the cap closed");
    expect(idle.filter((c) => !c.socket.closed).length).toBeLessThanOrEqual(CAP);
    expect(descriptors()).toBeLessThanOrEqual(before + CAP + 4);
    await othersServed();
  }, 30_000);
});
