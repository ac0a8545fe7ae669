// The dashboard's model mix: GET recommendations (cached 5 min, refresh=1
// recomputes) and model-management read the fleet; POST pull and delete change
// a node's disk through its Ollama. The two that change things are their own
// plugin, modelActions, so a guard can be put in front of them alone.
import { Elysia } from "elysia";
import type { Database } from "bun:sqlite";
import { routeFacts } from "../auth/route-facts.ts";
import type { LiveConfig } from "../config/live.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import { changeModels, probeOllama, pullModel } from "../backends/ollama.ts";
import { lineLimits, readLines } from "../backends/lines.ts";
import { reachableNodes } from "../fleet/catalog.ts";
import { modelInventory } from "../fleet/model-inventory.ts";
import { nameFault } from "../core/client-names.ts";
import { diskGb } from "../fleet/node-models.ts";
import { loadableUrl } from "../fleet/pins.ts";
import { notPullable, type Pulls } from "../fleet/pulls.ts";
import { recommend, type RecommendationsAnswer } from "../fleet/recommender.ts";
import type { NodeRecord, Registry } from "../fleet/registry.ts";
import { requestsByModel, usageByNodeModel } from "../store/model-usage.ts";
import { readJsonObject } from "./body.ts";
import { jsonError } from "../core/wire-errors.ts";

const RECOMMENDATIONS_TTL_MS = 5 * 60_000;
/** A pull may take minutes; it fails only when Ollama sends nothing for this long. */
const PULL_IDLE_MS = 600_000;

/** What the model mix reads and changes: the config, the nodes, the requests traced, the pulls under way. */
interface ModelSources {
  live: LiveConfig;
  registry: Registry;
  store: Database;
  pulls: Pulls;
}

export function modelManagementSurface(rt: ModelSources) {
  let cached: { at: number; answer: RecommendationsAnswer } | null = null;
  return new Elysia({ name: "model-management" })
    .use(routeFacts)
    .get("/dashboard/api/recommendations", ({ query }) => {
      const refresh = query.refresh ?? "0";
      if (refresh !== "0" && refresh !== "1") return jsonError(400, `refresh: expected 0 or 1, got ${JSON.stringify(refresh)}`);
      if (refresh === "1" || !cached || Date.now() - cached.at > RECOMMENDATIONS_TTL_MS) cached = { at: Date.now(), answer: recommendations(rt) };
      return cached.answer;
    }, { facts: { access: "client", body: "json", errors: "herd" } })
    .get("/dashboard/api/model-management", () => inventory(rt), { facts: { access: "client", body: "json", errors: "herd" } })
    .use(modelActions(rt));
}

/** POST pull and delete: they change what is on a node's disk. */
export function modelActions(rt: ModelSources) {
  return new Elysia({ name: "model-actions" })
    .use(routeFacts)
    .post("/dashboard/api/pull", ({ request }) => act(rt, request, pullOnto), { parse: "none", facts: { access: "admin", body: "json", errors: "herd" } })
    .post("/dashboard/api/delete", ({ request }) => act(rt, request, deleteFrom), { parse: "none", facts: { access: "admin", body: "json", errors: "herd" } });
}

function recommendations(rt: ModelSources): RecommendationsAnswer {
  const now = Date.now() / 1000;
  const nodes = reachableNodes(rt.registry).map((n) => ({
      node_id: n.id,
      total_ram_gb: rt.registry.hardware(n).memoryTotalGb,
      models: diskModels(n),
    }));
  return recommend({ nodes, requests_24h: requestsByModel(rt.store, now - 86_400), now });
}

function inventory(rt: ModelSources) {
  const nodes = reachableNodes(rt.registry).map((n) => ({ node_id: n.id, models: diskModels(n), loaded: n.ollama!.models_loaded.map((m) => m.name), disk: n.report.disk ?? null }));
  return modelInventory(nodes, usageByNodeModel(rt.store), Date.now() / 1000);
}

function diskModels(node: NodeRecord) {
  return (node.ollama?.models_available ?? []).map((m) => ({
    name: m.name,
    size_gb: diskGb(m),
    parameter_size: m.details?.parameter_size,
    quantization: m.details?.quantization_level,
  }));
}

// ---- pull and delete --------------------------------------------------------

/** What a node's Ollama said: null when it did it, else why not. */
type Action = (rt: ModelSources, url: string, node: NodeRecord, model: string) => Promise<{ status: number; error: string } | null>;

// Shared by pull and delete: the body, the node, the answer, and the fleet view updated at once.
async function act(rt: ModelSources, request: Request, action: Action): Promise<Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  for (const field of ["node_id", "model"]) {
    const value = body[field];
    if (typeof value !== "string" || !value.trim()) return jsonError(400, `${field} is required: a non-empty string`);
  }
  const [nodeId, model] = [(body.node_id as string).trim(), (body.model as string).trim()];
  const misnamed = nameFault(model);
  if (misnamed) return jsonError(400, `model: ${misnamed}`);
  const node = rt.registry.get(nodeId);
  if (!node) return jsonError(404, `unknown node_id "${nodeId}"; known nodes: ${rt.registry.all().map((n) => n.id).join(", ") || "none"}`);
  const answer = (status: number, error?: string) =>
    Response.json(error ? { ok: false, node_id: nodeId, model, error } : { ok: true, node_id: nodeId, model }, { status });
  const url = loadableUrl(rt.registry, node);
  if (!url) return answer(503, `node ${nodeId} is ${node.status}${node.ollama?.reachable === false ? " (its Ollama is unreachable)" : ""}; try again when it is online`);
  const failed = await action(rt, url, node, model);
  if (failed) return answer(failed.status, failed.error);
  await refreshDisk(rt, node, url);
  return answer(200);
}

// Blocks until Ollama's progress stream ends; one pull of a model at a time, fleet-wide (shared with POST /api/pull).
const pullOnto: Action = async (rt, url, node, model) => {
  const refusal = notPullable(model);
  if (refusal) return { status: 400, error: refusal };
  const busy = rt.pulls.begin(model, node.id);
  if (busy) return { status: 409, error: `${model} is already being pulled onto ${busy}; wait for that pull to finish` };
  try {
    // The timer covers the wait for Ollama's answer; after that, readLines bounds each silence.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${PULL_IDLE_MS} ms`)), PULL_IDLE_MS);
    const res = await pullModel(url, model, true, abort.signal).finally(() => clearTimeout(timer));
    let last: { status?: string; error?: string } = {};
    for await (const line of readLines(res.body!.getReader(), { ...lineLimits(rt.live.config), idleMs: PULL_IDLE_MS })) {
      last = JSON.parse(line);
      if (last.error) break;
    }
    if (last.error || last.status !== "success") return { status: 502, error: `node ${node.id}: ${last.error ?? `pull ended without success (HTTP ${res.status})`}` };
    return null;
  } catch (e) {
    return { status: 502, error: `node ${node.id} did not finish the pull: ${(e as Error).message}` };
  } finally {
    rt.pulls.end(model);
  }
};

const deleteFrom: Action = async (rt, url, node, model) => {
  const refused = await changeModels(url, "DELETE", "/api/delete", { model }, rt.live.config.timeouts.connectMs, nodeAnswerCap(rt.live.config));
  return refused && { status: refused.status === 404 ? 404 : 502, error: `node ${node.id}: ${refused.error}` };
};

/** The node's disk as its Ollama lists it now: the next heartbeat or poll would show a change, and a client should not wait for it. */
export async function refreshDisk(rt: { live: LiveConfig }, node: NodeRecord, url: string): Promise<void> {
  const probe = await probeOllama(url, rt.live.config.timeouts.connectMs, nodeAnswerCap(rt.live.config));
  if (probe.reachable && node.ollama) node.ollama.models_available = probe.models_available;
}
