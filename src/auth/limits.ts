// Request body limits by the body class a route declares (route-facts.ts): JSON
// server.maxBodyMb, uploads server.maxMediaBodyMb, heartbeats 256 KiB. A body is
// refused from its Content-Length before any of it is read, and a body sent
// without one (chunked) is cut off as soon as it passes the limit. In time, too:
// a body must arrive within timeouts.requestBodyMs, and one client address may
// send at most server.clientMaxPendingBodies at once, so stalled uploads cannot
// hold the router's connections.
import type { Config } from "../config/schema.ts";
import type { ClientGate } from "../router/client-gate.ts";
import type { BodyClass } from "./route-facts.ts";

const MB = 1024 * 1024;
const HEARTBEAT_MAX_BYTES = 256 * 1024;

export class BodyTooLarge extends Error {}

/** The body did not arrive within timeouts.requestBodyMs: a 408, and the connection closed. */
export class BodyTimeout extends Error {}

/** The client address already has server.clientMaxPendingBodies bodies arriving: a 429, and the connection closed. */
export class TooManyBodies extends Error {}

/**
 * The server-wide cap (Bun's maxRequestBodySize), past which Bun itself answers a bare 413: twice the
 * largest route limit, so a body a little over its route's limit still gets the route's own 413, and
 * a body read by a route that does not count (a multipart upload sent chunked) is still bounded.
 */
export function serverBodyCap(server: Config["server"]): number {
  return Math.round(2 * Math.max(server.maxBodyMb, server.maxMediaBodyMb) * MB);
}

/** How a request's body is to be read: its time, its sender's place among the bodies arriving, and (sent chunked) its size. */
interface Reading {
  /** Set for a body sent chunked, which readBody counts; a declared length was checked already. */
  limit: { bytes: number; message: string } | null;
  timeoutMs: number;
  client: string;
  /** The bodies arriving per client address, shared by every request the guard let through. */
  pending: ClientGate;
  maxPending: number;
}

const readings = new WeakMap<Request, Reading>();

/**
 * Remembers how readBody is to read a request that has a body, and checks the declared size:
 * the 413 message when the body is declared too large, else null. `pending` counts the bodies
 * arriving per client address (`client`).
 */
export function admitBody(request: Request, body: BodyClass, config: Config, client: string, pending: ClientGate): string | null {
  const declared = request.headers.get("content-length");
  if (declared === "0" || (declared === null && !request.headers.has("transfer-encoding"))) return null; // no body to wait for
  const { server } = config;
  const bytes = body === "heartbeat" ? HEARTBEAT_MAX_BYTES : Math.round((body === "media" ? server.maxMediaBodyMb : server.maxBodyMb) * MB);
  // The refusal's words are built only for a body that may need them (most requests declare a length that fits).
  const message = () => `request body too large: this route takes at most ${describe(bytes)} (${SETTING[body]})`;
  if (declared !== null && Number(declared) > bytes) return message();
  const limit = declared === null ? { bytes, message: message() } : null; // sent chunked: readBody counts it
  readings.set(request, { limit, timeoutMs: config.timeouts.requestBodyMs, client, pending, maxPending: server.clientMaxPendingBodies });
  return null;
}

/** The body as text, never reading past the route's limit (BodyTooLarge) nor for longer than its time (BodyTimeout), however it is sent. */
export function readBody(request: Request): Promise<string> {
  // A declared length was checked by admitBody, and Bun reads no further than it: one native read.
  // Counting chunk by chunk through a JS stream costs more than the rest of a request, so only a
  // body sent without one (chunked) is counted.
  return readingBody(request, (limit) => (limit === null || !request.body ? request.text() : counted(request.body, limit)));
}

/**
 * Runs `read` (which reads the body, e.g. `request.formData()`) within timeouts.requestBodyMs, as one of
 * at most server.clientMaxPendingBodies bodies its client address sends at once.
 */
export function readingBody<T>(request: Request, read: (limit: Reading["limit"]) => Promise<T>): Promise<T> {
  const r = readings.get(request);
  if (r === undefined) return read(null); // no body, or a request the guard did not see
  if (!r.pending.enter(r.client, r.maxPending)) {
    return Promise.reject(new TooManyBodies(`too many requests from ${r.client} are still sending their bodies (server.clientMaxPendingBodies: ${r.maxPending}); send them one after another or raise the cap`));
  }
  // One promise and one timer: every request with a body comes through here, and a race of promises cost more.
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      r.pending.leave(r.client);
      return true;
    };
    // Cut off by the timeout, the read's end, when the connection closes, concerns no one.
    const timer = setTimeout(() => settle() && reject(new BodyTimeout(`the request body did not arrive within ${r.timeoutMs} ms (timeouts.requestBodyMs)`)), r.timeoutMs);
    read(r.limit).then(
      (value) => settle() && resolve(value),
      (e) => settle() && reject(e),
    );
  });
}

async function counted(body: ReadableStream<Uint8Array>, limit: { bytes: number; message: string }): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit.bytes) throw new BodyTooLarge(limit.message);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Where each limit comes from, as a refusal names it. */
const SETTING: Record<BodyClass, string> = { json: "server.maxBodyMb", media: "server.maxMediaBodyMb", heartbeat: "fixed for heartbeats" };

function describe(bytes: number): string {
  return bytes >= MB ? `${+(bytes / MB).toFixed(2)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
