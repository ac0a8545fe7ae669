// Ollama's routes that change the models on the nodes' disks, each given its fleet meaning, for the
// admin: DELETE /api/delete takes a model off every node that has it (or the one node_id names),
// POST /api/copy copies it on every node that has it (or the one named), POST /api/create makes a
// model on the node node_id names, its progress streamed as that node's Ollama sends it; POST
// /api/push is refused, saying where to push from. The answers are Ollama's (server/routes.go
// DeleteHandler, CopyHandler, PushHandler; server/create.go CreateHandler, v0.32.15): an empty 200
// for a delete or copy done, {"error": "..."} for one that is not; X-Fleet-Node names the nodes changed.
import { Elysia } from "elysia";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { changeModels, createModel, type Refused } from "../backends/ollama.ts";
import type { LiveConfig } from "../config/live.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import { nameProblem } from "../core/client-names.ts";
import { jsonError } from "../core/wire-errors.ts";
import { MLX_PREFIX } from "../fleet/catalog.ts";
import { loadableUrl } from "../fleet/pins.ts";
import { markPulled } from "../fleet/pulls.ts";
import { type NodeRecord, onDisk, type Registry } from "../fleet/registry.ts";
import { modelOf, readJsonObject } from "./body.ts";
import { refreshDisk } from "./model-management.ts";
import { relayProgress } from "./progress.ts";

type Json = Record<string, unknown>;

/** The nodes whose disks change, and the config's timeouts and caps for the calls. */
interface Fleet {
  registry: Registry;
  live: LiveConfig;
}

/** What is on a node's disk is the admin's to change. */
const CHANGE: RouteFacts = { access: "admin", body: "json", errors: "ollama" };
const MODEL_REQUIRED = "model is required (or name)";

export function modelChangesSurface(rt: Fleet) {
  return new Elysia({ name: "model-changes" })
    .use(routeFacts)
    .delete("/api/delete", ({ request }) => remove(rt, request), { parse: "none", facts: CHANGE })
    .post("/api/copy", ({ request }) => copy(rt, request), { parse: "none", facts: CHANGE })
    .post("/api/create", ({ request }) => create(rt, request), { parse: "none", facts: CHANGE })
    .post("/api/push", ({ request }) => push(rt, request), { parse: "none", facts: CHANGE });
}

async function remove(rt: Fleet, request: Request): Promise<Response> {
  const read = await changeRequest(request);
  if (read instanceof Response) return read;
  const named = ollamaModel(read.body, MODEL_REQUIRED, ["model", "name"]);
  if ("error" in named) return jsonError(400, named.error);
  const { model } = named;
  const nodes = targets(rt.registry, read.nodeId, model);
  if (nodes instanceof Response) return nodes;
  return acrossNodes(rt, nodes, "deleted from", (url) => changeModels(url, "DELETE", "/api/delete", { model }, rt.live.config.timeouts.connectMs, nodeAnswerCap(rt.live.config)));
}

async function copy(rt: Fleet, request: Request): Promise<Response> {
  const read = await changeRequest(request);
  if (read instanceof Response) return read;
  const source = ollamaModel(read.body, "source is required", ["source"]);
  if ("error" in source) return jsonError(400, source.error);
  const destination = ollamaModel(read.body, "destination is required", ["destination"]);
  if ("error" in destination) return jsonError(400, destination.error);
  const nodes = targets(rt.registry, read.nodeId, source.model);
  if (nodes instanceof Response) return nodes;
  const names = { source: source.model, destination: destination.model };
  return acrossNodes(rt, nodes, `copied to "${names.destination}" on`, async (url, node) => {
    const refused = await changeModels(url, "POST", "/api/copy", names, rt.live.config.timeouts.connectMs, nodeAnswerCap(rt.live.config));
    if (!refused) markPulled(node, names.destination);
    return refused;
  });
}

/** A model is made from what one node holds (its base, the blobs its files name), so the client names that node. */
async function create(rt: Fleet, request: Request): Promise<Response> {
  const read = await changeRequest(request);
  if (read instanceof Response) return read;
  const { body, nodeId } = read;
  const named = modelOf(body, MODEL_REQUIRED, ["model", "name"]);
  if ("error" in named) return jsonError(400, named.error);
  if (body.stream !== undefined && typeof body.stream !== "boolean") return jsonError(400, "stream: expected true or false");
  if (nodeId === undefined) {
    const ids = rt.registry.all().map((n) => n.id).join(", ") || "none";
    return jsonError(400, `node_id: required: a model is created on one node's Ollama, from what that node holds; name the node (one of: ${ids})`);
  }
  const node = nodeNamed(rt.registry, nodeId);
  if (node instanceof Response) return node;
  const url = loadableUrl(rt.registry, node);
  if (!url) return jsonError(503, offline(node));
  const headers = { "X-Fleet-Node": node.id };
  const { node_id: _, ...forward } = body;
  try {
    return relayProgress(await createModel(url, forward, request.signal), node, named.model, headers);
  } catch (e) {
    return jsonError(502, `node ${node.id} did not take the create: ${(e as Error).message}`, headers);
  }
}

/** A push is signed with the key of the Ollama that sends it: the user's, on their own machine, which herd does not hold. */
async function push(rt: Fleet, request: Request): Promise<Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  const named = modelOf(body, MODEL_REQUIRED, ["model", "name"]);
  if ("error" in named) return jsonError(400, named.error);
  const { model } = named;
  const holders = rt.registry.all().filter((n) => onDisk(n, model)).map((n) => n.id);
  const where = holders.length ? `on a node that has it (${holders.join(", ")})` : "on the machine that has it (no node of the fleet lists it)";
  return jsonError(501, `herd does not push models: a push is signed with the Ollama key of the machine it is sent from (~/.ollama/id_ed25519, added to your ollama.com account); run "ollama push ${model}" ${where}, against its own Ollama`);
}

/** The body of a change and the node it names (node_id, in the body or the query string), or the 400 saying what is wrong. */
async function changeRequest(request: Request): Promise<{ body: Json; nodeId?: string } | Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  if (body.node_id !== undefined && typeof body.node_id !== "string") return jsonError(400, "node_id: expected a string");
  const named = [body.node_id, new URL(request.url).searchParams.get("node_id")].filter((id): id is string => typeof id === "string" && id !== "");
  const problem = named.map((id) => nameProblem("node_id", id)).find((p) => p !== null);
  if (problem) return jsonError(400, problem);
  if (new Set(named).size > 1) return jsonError(400, `node_id: the body names "${named[0]}", the query "${named[1]}"; name one node`);
  return { body, nodeId: named[0] };
}

/** modelOf, where a model no Ollama holds (an MLX server's) is refused, saying where it is kept instead. */
function ollamaModel(body: Json, missing: string, fields: string[]): { model: string } | { error: string } {
  const named = modelOf(body, missing, fields);
  if ("error" in named || !named.model.startsWith(MLX_PREFIX)) return named;
  return { error: `"${named.model}" is an MLX server's model, not Ollama's: it is on a node while the node's mlx servers in herd.config.ts (nodes[].mlx) name it` };
}

/** The one node named, or every node whose disk has `model`; a 404 when that is none. */
function targets(registry: Registry, nodeId: string | undefined, model: string): NodeRecord[] | Response {
  if (nodeId !== undefined) {
    const node = nodeNamed(registry, nodeId);
    return node instanceof Response ? node : [node];
  }
  const holders = registry.all().filter((n) => onDisk(n, model));
  return holders.length ? holders : jsonError(404, `model "${model}" not found on any node`);
}

function nodeNamed(registry: Registry, nodeId: string): NodeRecord | Response {
  const node = registry.get(nodeId);
  if (node) return node;
  const known = registry.all().map((n) => `${n.id} (${n.status})`).join(", ") || "none";
  return jsonError(404, `node "${nodeId}" not found; known nodes: ${known}`);
}

const offline = (node: NodeRecord) => `node ${node.id} is ${node.status}${node.ollama?.reachable === false ? " (its Ollama is unreachable)" : ""}; try again when it is online`;

/**
 * The change on each node at once, and the registry's view of each node changed updated from its Ollama. An empty 200
 * when every node made it; else the nodes that did (`verb`, e.g. "deleted from a") and each refusal, with the one
 * status the refusals share when no node made it, or a 502.
 */
async function acrossNodes(rt: Fleet, nodes: NodeRecord[], verb: string, change: (url: string, node: NodeRecord) => Promise<Refused | null>): Promise<Response> {
  const outcomes = await Promise.all(
    nodes.map(async (node): Promise<Refused | null> => {
      const url = loadableUrl(rt.registry, node);
      if (!url) return { status: 503, error: offline(node) };
      const refused = await change(url, node);
      // The node's own failure is a bad gateway from here; its message stays.
      if (refused) return { status: refused.status >= 500 ? 502 : refused.status, error: `node ${node.id}: ${refused.error}` };
      await refreshDisk(rt, node, url);
      return null;
    }),
  );
  const done = nodes.filter((_, i) => outcomes[i] === null).map((n) => n.id);
  const refusals = outcomes.filter((o) => o !== null);
  const headers: Record<string, string> = done.length ? { "X-Fleet-Node": done.join(", ") } : {};
  if (!refusals.length) return new Response(null, { status: 200, headers });
  const shared = !done.length && new Set(refusals.map((r) => r.status)).size === 1;
  const message = [...(done.length ? [`${verb} ${done.join(", ")}`] : []), ...refusals.map((r) => r.error)].join("; ");
  return jsonError(shared ? refusals[0]!.status : 502, message, headers);
}
