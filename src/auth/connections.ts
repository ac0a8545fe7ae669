// The client connections the router holds open, each a file descriptor. Bun closes a connection that sits idle
// between requests after server.keepAliveMs (its idleTimeout). While herd answers a request, herd's own timeouts
// bound it instead (a stream may rightly be silent for timeouts.idleMs, a cold load for timeouts.firstByteMs): each
// second, the connections still answering have their idle timer re-armed. A connection whose request body herd did
// not read to its end (a refusal, a route that takes none, an error) is closed behind its answer, as the rest of the
// body would otherwise hold it. And one client address may hold at most server.clientMaxConnections: past that many
// answering at once, a new connection's request is refused with a 429 and closed; past that many open (answering, or
// idle within the keep-alive), a new connection is answered and then closed rather than kept. Bun offers no count of
// connections per address: herd counts each connection by its address and port from its requests (a port that comes
// again once herd closed its connection is a new connection: the client's system may hand it out at once).
import type { Config } from "../config/schema.ts";

/** What herd needs of Bun's server: who sent a request (null once it is answered), and its connection's idle timer. */
export interface ConnectionServer {
  requestIP(request: Request): { address: string; port: number } | null;
  timeout(request: Request, seconds: number): void;
}

/** A connection, as its latest request showed it. */
interface Seen {
  request: Request;
  /** When it last answered, or its latest request came: ms, herd's clock. */
  at: number;
}

/** How often the connections answering have their idle timer re-armed, and the idle ones are forgotten. */
export const TICK_MS = 1000;
/** Bun checks its idle timers every 4 s: a connection idle for keepAliveMs may live this much longer. */
const BUN_TIMER_SLACK_MS = 4000;

/** Bun's idleTimeout for server.keepAliveMs: whole seconds. */
export function keepAliveSeconds(config: Config): number {
  return Math.ceil(config.server.keepAliveMs / 1000);
}

/** Requests whose answer closes their connection, as their address is past its cap. */
const closing = new WeakSet<Request>();

/** Whether the answer to `request` closes its connection: its address is past its cap, or its body was not read (to its end: `failed`). */
export function closesAfter(request: Request, failed: boolean): boolean {
  return closing.has(request) || (hasBody(request) && (failed || !request.bodyUsed));
}

export class ClientConnections {
  /** address → the client's port of each connection → what its requests showed. */
  private readonly byAddress = new Map<string, Map<number, Seen>>();
  private timer: Timer | null = null;

  /** Re-arms, each TICK_MS, the idle timer of each connection still answering; forgets the connections gone idle. */
  start(server: ConnectionServer, config: () => Config): void {
    this.stop();
    this.timer = setInterval(() => this.tick(server, config(), performance.now()), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** A request has arrived on the connection `from`: null to let it through, else why it is refused. */
  admit(server: ConnectionServer, request: Request, from: { address: string; port: number }, config: Config, now = performance.now()): string | null {
    const cap = config.server.clientMaxConnections;
    const connections = this.byAddress.get(from.address) ?? this.byAddress.set(from.address, new Map()).get(from.address)!;
    const seen = connections.get(from.port);
    // Its port again after herd closed its connection behind the answer: the client's system gave it to a new one.
    if (seen && (server.requestIP(seen.request) || !closesAfter(seen.request, false))) {
      // The next request on a connection kept alive; one answered with Connection: close goes with its answer too.
      if (closing.has(seen.request)) closing.add(request);
      [seen.request, seen.at] = [request, now];
      return null;
    }
    if (connections.size >= cap) this.forget(server, connections, now, windowMs(config));
    if (answering(server, connections) >= cap) {
      return `too many connections from ${from.address}: ${cap} are already waiting for an answer (server.clientMaxConnections); send requests over fewer connections, or raise the cap`;
    }
    const past = connections.size >= cap;
    connections.set(from.port, { request, at: now });
    if (past) closing.add(request);
    return null;
  }

  private tick(server: ConnectionServer, config: Config, now: number): void {
    const seconds = keepAliveSeconds(config);
    for (const [address, connections] of this.byAddress) {
      for (const seen of connections.values()) {
        if (!server.requestIP(seen.request)) continue;
        server.timeout(seen.request, seconds);
        seen.at = now;
      }
      this.forget(server, connections, now, windowMs(config));
      if (!connections.size) this.byAddress.delete(address);
    }
  }

  /** Drops the connections that are gone: answered, and closed or idle past the keep-alive. */
  private forget(server: ConnectionServer, connections: Map<number, Seen>, now: number, windowMs: number): void {
    for (const [port, seen] of connections) {
      if ((closesAfter(seen.request, false) || now - seen.at > windowMs) && !server.requestIP(seen.request)) connections.delete(port);
    }
  }
}

/** How long a connection may stay open after its last answer: the keep-alive, Bun's slack, and a tick. */
function windowMs(config: Config): number {
  return config.server.keepAliveMs + BUN_TIMER_SLACK_MS + TICK_MS;
}

function answering(server: ConnectionServer, connections: Map<number, Seen>): number {
  let n = 0;
  for (const seen of connections.values()) if (server.requestIP(seen.request)) n++;
  return n;
}

function hasBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  return (length !== null && length !== "0") || request.headers.has("transfer-encoding");
}
