// Request body limits by the body class a route declares (route-facts.ts): JSON
// server.maxBodyMb, uploads server.maxMediaBodyMb, heartbeats 256 KiB. A body is
// refused from its Content-Length before any of it is read, and a body sent
// without one (chunked) is cut off as soon as it passes the limit.
import type { Config } from "../config/schema.ts";
import type { BodyClass } from "./route-facts.ts";

const MB = 1024 * 1024;
const HEARTBEAT_MAX_BYTES = 256 * 1024;

export class BodyTooLarge extends Error {}

/**
 * The server-wide cap (Bun's maxRequestBodySize), past which Bun itself answers a bare 413: twice the
 * largest route limit, so a body a little over its route's limit still gets the route's own 413, and
 * a body read by a route that does not count (a multipart upload sent chunked) is still bounded.
 */
export function serverBodyCap(server: Config["server"]): number {
  return Math.round(2 * Math.max(server.maxBodyMb, server.maxMediaBodyMb) * MB);
}

const limits = new WeakMap<Request, { bytes: number; message: string }>();

/**
 * Remembers the limit of a route's body class for readBody, and checks the declared size:
 * the 413 message when the body is declared too large, else null.
 */
export function admitBody(request: Request, body: BodyClass, server: Config["server"]): string | null {
  const bytes = body === "heartbeat" ? HEARTBEAT_MAX_BYTES : Math.round((body === "media" ? server.maxMediaBodyMb : server.maxBodyMb) * MB);
  // The refusal's words are built only for a body that may need them (most requests declare a length that fits).
  const message = () => `request body too large: this route takes at most ${describe(bytes)} (${SETTING[body]})`;
  const declared = request.headers.get("content-length");
  if (declared !== null) return Number(declared) > bytes ? message() : null;
  limits.set(request, { bytes, message: message() }); // sent chunked: readBody counts it
  return null;
}

/** The body as text, never reading past the route's limit (BodyTooLarge), however it is sent. */
export async function readBody(request: Request): Promise<string> {
  const limit = limits.get(request);
  // A declared length was checked by admitBody, and Bun reads no further than it: one native read.
  // Counting chunk by chunk through a JS stream costs more than the rest of a request, so only a
  // body sent without one (chunked) is counted.
  if (limit === undefined || !request.body) return request.text();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
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
