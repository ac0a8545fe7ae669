// HTTP as Python's http.server speaks it, for the sim of a Python server (mlx_lm.server):
// Lib/http/server.py (Python 3.x) BaseHTTPRequestHandler's default protocol_version is "HTTP/1.0", so each connection
// carries one request, and an answer with no Content-Length ends when the server
// closes the connection (no chunked framing, no keep-alive). Bun.serve speaks
// HTTP/1.1 only, hence this small transport of its own.
import type { Socket } from "bun";
import { STATUS_CODES } from "node:http";

export interface Listener {
  port: number;
  hostname: string;
  /** Closes the port and every open connection. */
  stop(): void | Promise<void>;
}

export interface Http10Options {
  hostname: string;
  port: number;
  /** The Server header, e.g. "BaseHTTP/0.6 Python/3.12.8". */
  server: string;
  fetch(req: Request): Promise<Response>;
}

/** A head larger than this is not a request the sim answers (http.server's own limit is 64 KiB a line). */
const MAX_HEAD_BYTES = 64 * 1024;
const encoder = new TextEncoder();

export function listenHttp10(opts: Http10Options): Listener {
  const listener = Bun.listen<Exchange>({
    hostname: opts.hostname,
    port: opts.port,
    socket: {
      open: (socket) => void (socket.data = new Exchange(socket, opts)),
      data: (socket, bytes) => socket.data.received(bytes),
      drain: (socket) => socket.data.drained(),
      close: (socket) => socket.data.closed(),
      error: (socket) => socket.data.closed(),
    },
  });
  return { port: listener.port, hostname: listener.hostname, stop: () => listener.stop(true) };
}

/** One connection: its request read whole, then its answer written and the connection closed. */
class Exchange {
  private buffered = new Uint8Array(0);
  private started = false;
  private readonly gone = new AbortController();
  private unsent: Uint8Array[] = [];
  private wakeWriter: (() => void) | null = null;

  constructor(
    private readonly socket: Socket<Exchange>,
    private readonly opts: Http10Options,
  ) {}

  received(bytes: Uint8Array): void {
    if (this.started) return; // http.server reads one request a connection
    const all = new Uint8Array(this.buffered.length + bytes.length);
    all.set(this.buffered);
    all.set(bytes, this.buffered.length);
    this.buffered = all;
    const request = this.parse();
    if (request === "incomplete") return;
    this.started = true;
    if (request === "bad") return void this.socket.end();
    void this.answer(request);
  }

  private parse(): Request | "incomplete" | "bad" {
    const text = Buffer.from(this.buffered).toString("latin1");
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) return this.buffered.length > MAX_HEAD_BYTES ? "bad" : "incomplete";
    const [requestLine = "", ...lines] = text.slice(0, end).split("\r\n");
    const [method, target] = requestLine.split(" ");
    if (!method || !target?.startsWith("/")) return "bad";
    const headers = new Headers();
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    // http.server's handlers read Content-Length bytes of body, and nothing else.
    const length = Number(headers.get("content-length") ?? 0) || 0;
    const body = this.buffered.subarray(end + 4);
    if (body.length < length) return "incomplete";
    try {
      const url = `http://${headers.get("host") ?? `${this.opts.hostname}:${this.opts.port}`}${target}`;
      const hasBody = method !== "GET" && method !== "HEAD";
      return new Request(url, { method, headers, body: hasBody ? body.slice(0, length) : undefined, signal: this.gone.signal });
    } catch {
      return "bad";
    }
  }

  private async answer(req: Request): Promise<void> {
    const res = await this.opts.fetch(req);
    const reader = res.body?.getReader();
    // BaseHTTPRequestHandler buffers the head until end_headers(), which mlx_lm calls with the first
    // bytes of a stream or once a whole answer is ready: the head goes out with the first body bytes.
    let head: Uint8Array | null = encoder.encode(this.head(res));
    try {
      for (;;) {
        const next = reader ? await reader.read() : { done: true as const };
        if (next.done) break;
        if (head) await this.write(head);
        head = null;
        await this.write(next.value);
      }
      if (head) await this.write(head);
    } catch {
      // A body that fails ends the connection where it is (before any byte: no answer at all).
      await reader?.cancel().catch(() => {});
    }
    this.socket.end();
  }

  private head(res: Response): string {
    const lines = [`HTTP/1.0 ${res.status} ${STATUS_CODES[res.status] ?? ""}`, `Server: ${this.opts.server}`, `Date: ${new Date().toUTCString()}`];
    // mlx_lm/server.py 0.32.0 sends "Content-type" in that spelling; the other names as HTTP writes them.
    for (const [name, value] of res.headers) lines.push(`${name === "content-type" ? "Content-type" : titleCase(name)}: ${value}`);
    return `${lines.join("\r\n")}\r\n\r\n`;
  }

  private async write(bytes: Uint8Array): Promise<void> {
    if (this.gone.signal.aborted) throw new Error("the client closed the connection");
    this.unsent.push(bytes);
    this.drained();
    while (this.unsent.length) {
      await new Promise<void>((resolve) => (this.wakeWriter = resolve));
      if (this.gone.signal.aborted) throw new Error("the client closed the connection");
    }
  }

  drained(): void {
    while (this.unsent.length) {
      const bytes = this.unsent[0]!;
      const n = this.socket.write(bytes);
      if (n < bytes.length) {
        this.unsent[0] = bytes.subarray(Math.max(0, n));
        return;
      }
      this.unsent.shift();
    }
    this.wake();
  }

  closed(): void {
    this.gone.abort(new Error("the client closed the connection"));
    this.wake();
  }

  private wake(): void {
    const wake = this.wakeWriter;
    this.wakeWriter = null;
    wake?.();
  }
}

function titleCase(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}
