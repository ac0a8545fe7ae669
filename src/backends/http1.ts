// herd's HTTP/1.1 client for its hot path (chat, generate and embed calls to a
// node's Ollama): a keep-alive pool of Bun sockets per origin. Bun's fetch runs
// on an HTTP thread of its own and hands each request and each chunk of the
// answer across to the event loop; on a busy 2-core machine that hand-off cost
// more CPU than the proxying itself (docs/benchmarks-history.md, session 3: about
// 55 µs of 170 per request at one client). These sockets live on the event loop: no hand-off.
// Plain http:// only; herd calls anything else with fetch.
import type { Socket } from "bun";
import type { BodyReader } from "../core/capped-body.ts";

/** An answer whose head has arrived: status and type, then the body chunk by chunk (its `cancel` closes the connection, never reused). */
export interface Answer {
  status: number;
  contentType: string | null;
  body: BodyReader;
}

/** Idle sockets kept per origin, and how long one may idle before it is closed. */
const MAX_IDLE = 1024;
const IDLE_SECONDS = 30;
/** A head larger than this is not HTTP herd can use. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Chunks the reader has not taken yet, in bytes, before the socket stops reading (backpressure). */
const HIGH_WATER = 1024 * 1024;

const idle = new Map<string, Connection[]>();
const utf8 = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/**
 * POSTs a JSON body and resolves once the answer's head has arrived. Rejects when the node refuses the
 * connection, closes it before answering, sends something that is not HTTP, or `signal` aborts (with its reason).
 */
export function postJson(url: URL, body: string, signal: AbortSignal): Promise<Answer> {
  return url.protocol === "http:" ? overSocket(url, body, signal) : overFetch(url, body, signal);
}

async function overFetch(url: URL, body: string, signal: AbortSignal): Promise<Answer> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body, signal });
  const reader = res.body?.getReader() ?? { read: async () => ({ done: true }), cancel: async () => {} };
  return { status: res.status, contentType: res.headers.get("content-type"), body: reader };
}

async function overSocket(url: URL, body: string, signal: AbortSignal): Promise<Answer> {
  const origin = url.host;
  const request = utf8.encode(
    `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${origin}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const pooled = idle.get(origin)?.pop();
  if (pooled) {
    try {
      return await pooled.exchange(request, signal);
    } catch (e) {
      // A kept-alive socket the node had closed while it idled: the request never reached it, so a fresh connection may send it.
      if (!(e instanceof ClosedBeforeAnswer)) throw e;
    }
  }
  return (await connect(url, origin, signal)).exchange(request, signal);
}

class ClosedBeforeAnswer extends Error {
  constructor() {
    super("the node closed the connection before answering");
  }
}

/**
 * A new connection to the node. `signal` ends the wait too: a host that is off answers no SYN, and the
 * system's own connect timeout (a minute or two) must not hold a request past herd's timeouts.
 */
function connect(url: URL, origin: string, signal: AbortSignal): Promise<Connection> {
  const connection = new Connection(origin);
  const connecting = Bun.connect<Connection>({ hostname: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80), data: connection, socket: handlers });
  return new Promise((resolve, reject) => {
    const abandon = () => {
      reject(signal.reason);
      connecting.then((socket) => socket.terminate(), () => {});
    };
    if (signal.aborted) return abandon();
    signal.addEventListener("abort", abandon, { once: true });
    connecting.then(
      (socket) => {
        signal.removeEventListener("abort", abandon);
        connection.socket = socket;
        socket.setNoDelay(true);
        resolve(connection);
      },
      (e: Error & { code?: string }) => {
        signal.removeEventListener("abort", abandon);
        reject(e.code === "ECONNREFUSED" ? Object.assign(new Error("connection refused"), { code: "ConnectionRefused" }) : e);
      },
    );
  });
}

const handlers = {
  data: (s: Socket<Connection>, bytes: Buffer) => s.data.received(bytes),
  drain: (s: Socket<Connection>) => s.data.drained(),
  end: (s: Socket<Connection>) => s.data.closed(),
  close: (s: Socket<Connection>) => s.data.closed(),
  error: (s: Socket<Connection>) => s.data.closed(),
  timeout: (s: Socket<Connection>) => s.data.closed(),
};

/** How the body of the current answer ends. */
type Framing = { kind: "length"; left: number } | { kind: "chunked" } | { kind: "close" };

/** One socket and the one exchange it carries at a time. */
class Connection {
  socket!: Socket<Connection>;
  private unsent: Uint8Array | null = null;
  /** Bytes of the head read so far; null once the head is parsed. */
  private head: Uint8Array | null = null;
  private answered: ((a: Answer) => void) | null = null;
  private failed: ((e: Error) => void) | null = null;
  private body: Body | null = null;
  private framing: Framing = { kind: "close" };
  private chunks = new ChunkedDecoder();
  private keepAlive = true;
  private signal: AbortSignal | null = null;
  private done = true;
  private paused = false;

  constructor(private readonly origin: string) {}

  exchange(request: Uint8Array, signal: AbortSignal): Promise<Answer> {
    if (signal.aborted) {
      this.release();
      return Promise.reject(signal.reason);
    }
    this.socket.timeout(0);
    this.socket.ref();
    this.done = false;
    this.head = new Uint8Array(0);
    this.body = null;
    this.keepAlive = true;
    this.signal = signal;
    signal.addEventListener("abort", this.abort);
    const answer = new Promise<Answer>((resolve, reject) => {
      this.answered = resolve;
      this.failed = reject;
    });
    this.write(request);
    return answer;
  }

  private write(bytes: Uint8Array): void {
    const n = this.socket.write(bytes);
    this.unsent = n >= 0 && n < bytes.length ? bytes.subarray(n) : null;
  }

  drained(): void {
    if (this.unsent) this.write(this.unsent);
  }

  received(bytes: Uint8Array): void {
    if (this.done) return; // an idle socket the node spoke on: nothing to do with it
    if (this.head) return this.readHead(bytes);
    this.readBody(bytes);
  }

  private readHead(bytes: Uint8Array): void {
    const head = concat(this.head!, bytes);
    const end = indexOfBlankLine(head);
    if (end < 0) {
      if (head.length > MAX_HEAD_BYTES) return this.fail(new Error(`the node sent a head of more than ${MAX_HEAD_BYTES} bytes`));
      this.head = kept(head, bytes);
      return;
    }
    const lines = latin1.decode(head.subarray(0, end)).split("\r\n");
    const status = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]!);
    if (!status) return this.fail(new Error(`the node did not answer in HTTP/1.1: ${lines[0]!.slice(0, 80)}`));
    const code = Number(status[2]);
    const rest = head.subarray(end + 4);
    // 100 Continue and other interim answers: the real one follows.
    if (code < 200) {
      this.head = new Uint8Array(0);
      if (rest.length) this.readHead(rest);
      return;
    }
    let contentType: string | null = null;
    let length: number | null = null;
    let chunked = false;
    this.keepAlive = status[1] === "1";
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-type") contentType = value;
      else if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = value.toLowerCase().includes("chunked");
      else if (name === "connection") this.keepAlive = value.toLowerCase() === "keep-alive" || (this.keepAlive && value.toLowerCase() !== "close");
    }
    this.head = null;
    this.framing = code === 204 || code === 304 ? { kind: "length", left: 0 } : chunked ? { kind: "chunked" } : length !== null && length >= 0 ? { kind: "length", left: length } : { kind: "close" };
    if (this.framing.kind === "close") this.keepAlive = false;
    if (this.framing.kind === "chunked") this.chunks = new ChunkedDecoder();
    this.body = new Body(this);
    this.answered!({ status: code, contentType, body: this.body });
    this.answered = this.failed = null;
    if (rest.length) this.readBody(rest);
    else if (this.framing.kind === "length" && this.framing.left === 0) this.finish();
  }

  private readBody(bytes: Uint8Array): void {
    const framing = this.framing;
    if (framing.kind === "close") return this.body!.push(bytes);
    if (framing.kind === "length") {
      const take = bytes.length <= framing.left ? bytes : bytes.subarray(0, framing.left);
      framing.left -= take.length;
      this.body!.push(take);
      if (framing.left === 0) this.finish();
      return;
    }
    const decoded = this.chunks.feed(bytes);
    if (typeof decoded === "string") return this.fail(new Error(decoded));
    // What came in one read goes to the reader as one piece, however many chunks it framed: a relay
    // then passes the lines of a read on in one write, not one write per chunk.
    this.body!.push(decoded.length === 1 ? decoded[0]! : Buffer.concat(decoded));
    if (this.chunks.ended) this.finish();
  }

  /** The answer is whole: its reader gets the end, and the socket goes back to the pool. */
  private finish(): void {
    this.body!.end();
    this.settle();
    // A node may answer before it has read the whole request (a refusal): the rest, still unsent, would
    // run into the next request on this connection, so it is not reused.
    if (this.keepAlive && !this.unsent) this.release();
    else this.socket.end();
  }

  private settle(): void {
    this.done = true;
    this.signal?.removeEventListener("abort", this.abort);
    this.signal = null;
  }

  private release(): void {
    const pool = idle.get(this.origin) ?? idle.set(this.origin, []).get(this.origin)!;
    if (pool.length >= MAX_IDLE) return void this.socket.end();
    // The answer may have ended while its slow reader held the socket paused; the next one needs it reading.
    if (this.paused) this.socket.resume();
    this.paused = false;
    // An idle socket must not keep a stopping herd alive.
    this.socket.timeout(IDLE_SECONDS);
    this.socket.unref();
    pool.push(this);
  }

  private fail(error: Error): void {
    if (this.done) return;
    this.settle();
    this.socket.terminate();
    this.failed?.(error);
    this.body?.fail(error);
    this.answered = this.failed = null;
  }

  private readonly abort = () => this.fail(this.signal!.reason);

  /** The reader went away: this connection is not reused. */
  cancel(): void {
    this.fail(new Error("cancelled"));
  }

  /** Backpressure: the reader has this many bytes it has not taken; past the high-water mark the socket stops reading. */
  backlog(bytes: number): void {
    if (bytes > HIGH_WATER && !this.paused) this.socket.pause();
    else if (bytes <= HIGH_WATER / 2 && this.paused) this.socket.resume();
    else return;
    this.paused = !this.paused;
  }

  closed(): void {
    const pool = idle.get(this.origin);
    const at = pool?.indexOf(this) ?? -1;
    if (at >= 0) pool!.splice(at, 1);
    if (this.done) return;
    // A body that runs until the connection closes is whole now; anything else was cut.
    if (!this.head && this.framing.kind === "close") {
      this.body!.end();
      this.settle();
      return;
    }
    this.fail(this.head && this.head.length === 0 && !this.body ? new ClosedBeforeAnswer() : new Error("the node closed the connection before the answer ended"));
  }
}

/** The body as its reader sees it: chunks queued as they arrive, taken one read at a time. */
class Body implements BodyReader {
  private queue: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private error: Error | null = null;
  private waiting: { resolve(r: { done: boolean; value?: Uint8Array }): void; reject(e: Error): void } | null = null;

  constructor(private readonly connection: Connection) {}

  push(chunk: Uint8Array): void {
    if (!chunk.length) return;
    if (this.waiting) {
      const { resolve } = this.waiting;
      this.waiting = null;
      return resolve({ done: false, value: chunk });
    }
    // Bun may reuse a data callback's buffer once it returns: a chunk kept for later is a copy.
    this.queue.push(chunk.slice());
    this.queued += chunk.length;
    this.connection.backlog(this.queued);
  }

  end(): void {
    this.ended = true;
    if (this.waiting) this.waiting.resolve({ done: true });
    this.waiting = null;
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.error = error;
    if (this.waiting) this.waiting.reject(error);
    this.waiting = null;
  }

  read(): Promise<{ done: boolean; value?: Uint8Array }> {
    const value = this.queue.shift();
    if (value) {
      this.queued -= value.length;
      // Once the answer is whole its connection may carry another, whose backlog is not this one's.
      if (!this.ended) this.connection.backlog(this.queued);
      return Promise.resolve({ done: false, value });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ done: true });
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** Like a web stream's: a read waiting now, and every later one, is done. */
  async cancel(): Promise<void> {
    if (this.ended || this.error) return;
    this.queue = [];
    this.end();
    this.connection.cancel();
  }
}

/** Transfer-Encoding: chunked, decoded across however the bytes arrive. */
class ChunkedDecoder {
  ended = false;
  /** Bytes of a size line (or trailer line) not yet whole. */
  private line: Uint8Array = new Uint8Array(0);
  /** Bytes left in the current chunk's data; then its CRLF. */
  private left = 0;
  private crlf = 0;
  private trailers = false;

  /** The data in `bytes`, or what is wrong with the framing. */
  feed(bytes: Uint8Array): Uint8Array[] | string {
    const out: Uint8Array[] = [];
    let i = 0;
    while (i < bytes.length && !this.ended) {
      if (this.left > 0) {
        const n = Math.min(this.left, bytes.length - i);
        out.push(bytes.subarray(i, i + n));
        this.left -= n;
        i += n;
        if (this.left === 0) this.crlf = 2;
        continue;
      }
      if (this.crlf > 0) {
        this.crlf--;
        i++;
        continue;
      }
      const nl = bytes.indexOf(10, i);
      if (nl < 0) {
        const rest = bytes.subarray(i);
        this.line = kept(concat(this.line, rest), rest);
        if (this.line.length > 4096) return "the node sent a chunk size line of more than 4096 bytes";
        break;
      }
      const text = latin1.decode(concat(this.line, bytes.subarray(i, nl))).trim();
      this.line = new Uint8Array(0);
      i = nl + 1;
      if (this.trailers) {
        if (!text) this.ended = true;
        continue;
      }
      const size = Number.parseInt(text.split(";")[0]!, 16);
      if (!Number.isFinite(size) || size < 0) return `the node sent a bad chunk size: ${text.slice(0, 40)}`;
      if (size === 0) this.trailers = true;
      else this.left = size;
    }
    return out;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!a.length) return b;
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

/** `joined` to keep past this data callback: a copy when it is still the callback's own buffer, which Bun may reuse. */
function kept(joined: Uint8Array, received: Uint8Array): Uint8Array {
  return joined === received ? received.slice() : joined;
}

function indexOfBlankLine(bytes: Uint8Array): number {
  for (let i = bytes.indexOf(13); i >= 0 && i + 3 < bytes.length; i = bytes.indexOf(13, i + 1)) {
    if (bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
  }
  return -1;
}
