// What the router's requests to the services a node runs beside Ollama share (image generation,
// transcription, native embedding servers): the nodes that can take one, least busy first, and one
// call with a deadline and a bounded answer. A backend plans a ServiceJob; the pipeline runs it (pipeline/service.ts).
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import type { Queues } from "../fleet/queues.ts";
import { NodeFailure, RouteError } from "../errors.ts";
import { describeFetchError } from "./ollama.ts";
import { eitherSignal } from "../abort.ts";

/** A request for a node's service, planned: the model that runs, the nodes to try in order, the call to one. */
export interface ServiceJob<T> {
  model: string;
  nodes: NodeRecord[];
  /** A NodeFailure when the node could not be reached (or no longer offers the model): the next node may. */
  call(node: NodeRecord, signal: AbortSignal): Promise<ServiceAnswer<T>>;
}

export interface ServiceAnswer<T> {
  value: T;
  /** X-Fleet-Backend: image, transcription, native, vision, or ollama. */
  backend: string;
}

/** Online, undrained nodes that offer what is asked: the least busy first (all the router runs there), then those with the most free memory. */
export function serviceNodes(registry: Registry, queues: Queues, offers: (node: NodeRecord) => boolean): NodeRecord[] {
  const free = (n: NodeRecord) => n.report.memory?.available_gb ?? -1;
  const nodes = registry.all().filter((n) => n.status === "online" && !registry.isDraining(n) && offers(n));
  const busy = new Map(nodes.map((n) => [n.id, load(queues, n.id)]));
  return nodes.sort((a, b) => busy.get(a.id)! - busy.get(b.id)! || free(b) - free(a) || a.id.localeCompare(b.id));
}

function load(queues: Queues, nodeId: string): number {
  const { pending, inFlight } = queues.nodeLoad(nodeId);
  return pending + inFlight;
}

/** How the router calls a node's service: its deadline, the node's credential (when the config has one), the request's signal. */
export interface ServiceCall {
  timeoutMs: number;
  credential?: string | null;
  signal: AbortSignal;
}

/**
 * The most of a node's answer herd reads; a longer one is refused, not held. A PNG of 4096×4096 pixels, a
 * transcript of hours of audio, and the vectors of a request's worth of images all fit.
 */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * Calls a node's service with a deadline for the whole answer. A network failure is a NodeFailure; running
 * out of time is a RouteError with `timeoutStatus`; an answer over MAX_ANSWER_BYTES is a 502; an aborted signal
 * (the client gone, herd stopping) ends it with its reason.
 */
export async function callNode(
  url: string,
  init: { method: "GET" | "POST"; body?: string | FormData },
  opts: ServiceCall & { headers?: Record<string, string>; timeoutStatus: number },
): Promise<{ res: Response; bytes: Uint8Array }> {
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = eitherSignal(opts.signal, deadline);
  const headers = opts.credential ? { ...opts.headers, authorization: `Bearer ${opts.credential}` } : opts.headers;
  const host = new URL(url).host;
  try {
    const res = await fetch(url, { ...init, headers, signal: signal.signal });
    return { res, bytes: await capped(res, host) };
  } catch (e) {
    if (opts.signal.aborted) throw opts.signal.reason;
    if (deadline.aborted) throw new RouteError(opts.timeoutStatus, `no answer from ${host} within ${opts.timeoutMs} ms`);
    if (e instanceof RouteError) throw e;
    throw new NodeFailure(`${host}: ${describeFetchError(e, opts.timeoutMs)}`);
  } finally {
    signal.release();
  }
}

/** The answer's body, read up to MAX_ANSWER_BYTES. */
async function capped(res: Response, host: string): Promise<Uint8Array> {
  const tooLong = () => new RouteError(502, `${host} answered more than ${MAX_ANSWER_BYTES / 2 ** 20} MiB; herd reads no more`);
  if (Number(res.headers.get("content-length")) > MAX_ANSWER_BYTES) {
    await res.body?.cancel();
    throw tooLong();
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of res.body ?? []) {
    size += part.length;
    if (size > MAX_ANSWER_BYTES) {
      await res.body!.cancel().catch(() => {});
      throw tooLong();
    }
    parts.push(part);
  }
  return Buffer.concat(parts, size);
}

/** How much of a node's error message goes on to the client. */
export const MAX_ERROR_CHARS = 1000;

/** The error a node's service answered with: {"error": "..."} (herd's, Ollama Herd's), FastAPI's {"detail": "..."}, or what its status says. */
export function errorOf(res: Response, bytes: Uint8Array): string {
  try {
    const json = JSON.parse(new TextDecoder().decode(bytes)) as { error?: unknown; detail?: unknown };
    const error = typeof json.error === "object" && json.error ? (json.error as { message?: unknown }).message : (json.error ?? json.detail);
    if (typeof error === "string" && error) return error.slice(0, MAX_ERROR_CHARS);
  } catch {
    // not JSON: the status says it
  }
  return `HTTP ${res.status}`;
}
