// What the router's requests to the services a node runs beside Ollama share (image generation,
// transcription, native embedding servers): the nodes that can take one, least busy first, and one
// call with a deadline and a bounded answer. A backend plans a ServiceJob; the pipeline runs it (pipeline/service.ts).
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import type { Queues } from "../fleet/queues.ts";
import { type AnswerCap, AnswerTooLarge, responseBytes } from "../core/capped-body.ts";
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

/** How the router calls a node's service: its deadline, the largest answer it may send, the node's credential (when the config has one), the request's signal. */
export interface ServiceCall {
  timeoutMs: number;
  maxAnswer: AnswerCap;
  credential?: string | null;
  signal: AbortSignal;
}

/**
 * Calls a node's service with a deadline for the whole answer, read up to `maxAnswer`. A network failure is a
 * NodeFailure; running out of time is a RouteError with `timeoutStatus`, an answer past its cap a 502; an aborted
 * signal (the client gone, herd stopping) ends it with its reason.
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
    return { res, bytes: await responseBytes(res, opts.maxAnswer) };
  } catch (e) {
    if (opts.signal.aborted) throw opts.signal.reason;
    if (e instanceof AnswerTooLarge) throw new RouteError(502, `${host}: ${e.message}`);
    if (deadline.aborted) throw new RouteError(opts.timeoutStatus, `no answer from ${host} within ${opts.timeoutMs} ms`);
    throw new NodeFailure(`${host}: ${describeFetchError(e, opts.timeoutMs)}`);
  } finally {
    signal.release();
  }
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
