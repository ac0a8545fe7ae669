// POST /api/pull: Ollama's pull, onto the node with the most free memory or the
// one named by node_id, its NDJSON progress streamed back as Ollama sends it.
import { Elysia } from "elysia";
import { pullModel } from "../backends/ollama.ts";
import { markPulled, notPullable, pullTarget } from "../fleet/pulls.ts";
import type { Runtime } from "../runtime.ts";
import { readJsonObject } from "./body.ts";
import { jsonError } from "./errors.ts";

export function pullSurface(rt: Runtime) {
  return new Elysia({ name: "pull" }).post("/api/pull", ({ request }) => pull(rt, request), { parse: "none" });
}

async function pull(rt: Runtime, request: Request): Promise<Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  const model = [body.model, body.name].find((m): m is string => typeof m === "string" && m.trim() !== "");
  if (!model) return jsonError(400, "name is required (or model)");
  if (body.stream !== undefined && typeof body.stream !== "boolean") return jsonError(400, "stream: expected true or false");
  if (body.node_id !== undefined && typeof body.node_id !== "string") return jsonError(400, "node_id: expected a string");
  const refusal = notPullable(model);
  if (refusal) return jsonError(400, refusal);

  const node = body.node_id ? rt.registry.get(body.node_id) : pullTarget(rt.registry);
  if (body.node_id && (!node || node.status !== "online" || !rt.registry.ollamaUrl(node))) {
    const known = rt.registry.all().map((n) => `${n.id} (${n.status})`).join(", ") || "none";
    return jsonError(404, `node "${body.node_id}" not found or offline; known nodes: ${known}`);
  }
  if (!node) return jsonError(503, "no online node can take a pull right now");
  const busy = rt.pulls.begin(model, node.id);
  if (busy) return jsonError(409, `"${model}" is already being pulled onto ${busy}; wait for that pull to finish`, { "X-Fleet-Node": busy });

  const stream = body.stream !== false;
  const headers = { "X-Fleet-Node": node.id };
  let upstream: Response;
  try {
    upstream = await pullModel(rt.registry.ollamaUrl(node)!, model, stream, request.signal);
  } catch (e) {
    rt.pulls.end(model);
    return jsonError(502, `node ${node.id} did not take the pull: ${(e as Error).message}`, headers);
  }
  // Watch the progress go by: the pull is over when the stream ends, a success when its last line says so.
  let last = "";
  const decoder = new TextDecoder();
  const watch = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      last = (last + decoder.decode(chunk, { stream: true })).slice(-512);
      controller.enqueue(chunk);
    },
    flush() {
      rt.pulls.end(model);
      if (upstream.ok && /"status":\s*"success"/.test(last.trim().split("\n").at(-1) ?? "")) markPulled(node, model);
    },
  });
  const body$ = upstream.body ?? new ReadableStream({ start: (c) => c.close() });
  return new Response(body$.pipeThrough(watch), {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/x-ndjson", ...headers },
  });
}
