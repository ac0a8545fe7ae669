// POST /api/pull: Ollama's pull, onto the node with the most free memory or the
// one named by node_id, its NDJSON progress streamed back as Ollama sends it.
import { Elysia } from "elysia";
import { routeFacts } from "../auth/route-facts.ts";
import { embeddingKind } from "../backends/embedding.ts";
import { serviceImageModel } from "../fleet/image-models.ts";
import { pullModel } from "../backends/ollama.ts";
import { fleetTranscriptionModels } from "../backends/transcription.ts";
import { notPullable, placePull, type Pulls, pullTargets } from "../fleet/pulls.ts";
import type { Registry } from "../fleet/registry.ts";
import { callerOf } from "../auth/guard.ts";
import { modelOf, readJsonObject, refusedHeaders } from "./body.ts";
import { jsonError } from "../core/wire-errors.ts";
import { relayProgress } from "./progress.ts";
import { fleetHeaders } from "../core/fleet-headers.ts";

/** The fleet a pull goes to, and the pulls under way. */
interface Fleet {
  registry: Registry;
  pulls: Pulls;
}

export function pullSurface(rt: Fleet) {
  // What is on a node's disk is the admin's to change, or a key's given the "pull" permission.
  return new Elysia({ name: "pull" }).use(routeFacts).post("/api/pull", ({ request }) => pull(rt, request), { parse: "none", facts: { access: "pull", body: "json", errors: "ollama" } });
}

async function pull(rt: Fleet, request: Request): Promise<Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body, refusedHeaders({ error: body }));
  const named = modelOf(body, "name is required (or model)", ["model", "name"]);
  // Every answer carries the X-Fleet-* set (seed 000); a refusal names the node only when a pull there is why.
  const refused = (status: number, message: string, nodeId?: string) => jsonError(status, message, { ...refusedHeaders(named), ...(nodeId ? { "X-Fleet-Node": nodeId } : {}) });
  if ("error" in named) return refused(400, named.error);
  const { model } = named;
  if (body.stream !== undefined && typeof body.stream !== "boolean") return refused(400, "stream: expected true or false");
  if (body.node_id !== undefined && typeof body.node_id !== "string") return refused(400, "node_id: expected a string");
  const refusal = notPullable(model) ?? notOllamas(rt, model);
  if (refusal) return refused(400, refusal);
  // A key given "pull" may pull what it may run, where herd chooses; which node's disk takes it is the admin's call.
  const key = callerOf(request);
  if (key && !key.mayServe(model)) return refused(403, `key "${key.client.name}" may not pull "${model}": it is not among the key's models (auth.clients[].models)`);
  if (key && body.node_id !== undefined) return refused(403, `key "${key.client.name}" may not choose the node a pull goes to: leave node_id out, or send the admin token`);

  const targets = body.node_id ? [rt.registry.get(body.node_id)].filter((n) => n !== undefined) : pullTargets(rt.registry);
  const chosen = targets[0];
  if (body.node_id && (!chosen || chosen.status !== "online" || !rt.registry.ollamaUrl(chosen))) {
    const known = rt.registry.all().map((n) => `${n.id} (${n.status})`).join(", ") || "none";
    return refused(404, `node "${body.node_id}" not found or offline; known nodes: ${known}`);
  }
  const place = placePull(rt.registry, model, targets);
  if (!place) return refused(503, "no online node can take a pull right now");
  if ("refused" in place) return refused(503, place.refused);
  const { node } = place;
  const busy = rt.pulls.begin(model, node.id);
  if (busy) return refused(409, `"${model}" is already being pulled onto ${busy}; wait for that pull to finish`, busy);

  const stream = body.stream !== false;
  // The node's Ollama took the pull: its answer, and its failure, are that node's.
  const headers = fleetHeaders(model, { nodeId: node.id, servedModel: model, backend: "ollama", fallback: false, score: null, contextOverflow: null }, 0);
  let upstream: Response;
  try {
    upstream = await pullModel(rt.registry.ollamaUrl(node)!, model, stream, request.signal);
  } catch (e) {
    rt.pulls.end(model);
    return jsonError(502, `node ${node.id} did not take the pull: ${(e as Error).message}`, headers);
  }
  // The pull is over when the node's answer ends.
  return relayProgress(upstream, node, model, headers, () => rt.pulls.end(model));
}

/** A model the fleet serves outside Ollama (an image CLI, Qwen3-ASR, a vision embedding server): how to install it instead. */
function notOllamas(rt: Fleet, model: string): string | null {
  const refuse = (what: string, install: string) => `"${model}" is ${what}, not an Ollama model; install it with: ${install}`;
  const image = serviceImageModel(rt.registry, model);
  if (image?.backend === "diffusionkit") return refuse("a DiffusionKit image model", "pip install diffusionkit (then list it under nodes[].images)");
  if (image) return refuse("an mflux image model", "uv tool install mflux (then list it under nodes[].images)");
  if (fleetTranscriptionModels(rt.registry).includes(model)) return refuse("a Qwen3-ASR speech-to-text model", "pip install mlx-qwen3-asr (then list it under nodes[].transcription)");
  if (embeddingKind(rt.registry, model) === "vision") {
    return refuse("a vision embedding model of a native embedding server", "a vision embedding server on the node (port 11438), declared under nodes[].embedding.vision");
  }
  return null;
}
