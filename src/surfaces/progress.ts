// A node's Ollama progress (POST /api/pull, /api/create: NDJSON lines, or one object when not
// streamed), relayed to the client as it came and watched for the "success" that ends it well.
import { markPulled } from "../fleet/pulls.ts";
import type { NodeRecord } from "../fleet/registry.ts";

/**
 * The node's answer as the client's, its status kept but a failure of the node's own (Ollama answers 500 for a
 * manifest it cannot find) a bad gateway from here, its message kept. At the success line `model` is on the node's
 * disk: marked before that line goes on, since a client may ask for the list as soon as it reads it, before the
 * stream's end reaches here. `ended` runs once the node's answer has all gone on.
 */
export function relayProgress(upstream: Response, node: NodeRecord, model: string, headers: Record<string, string>, ended = () => {}): Response {
  let last = "";
  const decoder = new TextDecoder();
  let succeeded = false;
  const success = () => upstream.ok && /"status":\s*"success"/.test(last.trim().split("\n").at(-1) ?? "");
  const watch = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      last = (last + decoder.decode(chunk, { stream: true })).slice(-512);
      if (!succeeded && success()) {
        succeeded = true;
        markPulled(node, model);
      }
      controller.enqueue(chunk);
    },
    flush: ended,
  });
  const body = upstream.body ?? new ReadableStream({ start: (c) => c.close() });
  return new Response(body.pipeThrough(watch), {
    status: upstream.status >= 500 ? 502 : upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/x-ndjson", ...headers },
  });
}
