// Request body limits per route: the JSON routes server.maxBodyMb, the routes
// that take audio uploads server.maxMediaBodyMb, heartbeats 256 KiB. A body is
// refused from its Content-Length before any of it is read, and a body sent
// without one (chunked) is cut off as soon as it passes the limit.
import type { Config } from "../config/schema.ts";

const MB = 1024 * 1024;
const HEARTBEAT_MAX_BYTES = 256 * 1024;

/** Routes whose body is an upload (audio for transcription), not a JSON request. */
const MEDIA_ROUTES = new Set(["/api/transcribe"]);

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
 * Remembers the limit of `route` (as registered) for readBody, and checks the declared size:
 * the 413 message when the body is declared too large, else null.
 */
export function admitBody(request: Request, route: string, server: Config["server"]): string | null {
  const heartbeat = route === "/heartbeat";
  const media = MEDIA_ROUTES.has(route);
  const bytes = heartbeat ? HEARTBEAT_MAX_BYTES : Math.round((media ? server.maxMediaBodyMb : server.maxBodyMb) * MB);
  // The refusal's words are built only for a body that may need them (most requests declare a length that fits).
  const message = () => `request body too large: this route takes at most ${describe(bytes)} (${heartbeat ? "fixed for heartbeats" : media ? "server.maxMediaBodyMb" : "server.maxBodyMb"})`;
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

function describe(bytes: number): string {
  return bytes >= MB ? `${+(bytes / MB).toFixed(2)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
