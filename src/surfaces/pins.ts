// Pinning models resident: POST /fleet/pin warms a model and pins it,
// DELETE /fleet/pin/{model} releases it, and the dashboard's pinned-models pair
// reads and toggles pins (without warming: the preloader loads them).
import { Elysia } from "elysia";
import * as v from "valibot";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import type { LiveConfig } from "../config/live.ts";
import { MLX_PREFIX, mlxServers } from "../fleet/catalog.ts";
import { modelNameCheck } from "../fleet/model-name.ts";
import { type CoResidence, loadableUrl, type Pins } from "../fleet/pins.ts";
import { cloudOn, loadedOn, onDisk, type NodeRecord, type Registry } from "../fleet/registry.ts";
import { OS_RESERVE_GB } from "../fleet/scorer.ts";
import type { Warmer } from "../fleet/preloader.ts";
import { modelInPath, validBody } from "./body.ts";
import { jsonError } from "../core/wire-errors.ts";

// formatIssues prefixes each message with its field: "timeout_s: expected a number of seconds, got "30s"".
const name = v.pipe(v.string("expected a string"), v.trim(), v.nonEmpty("expected a non-empty string"));
const flag = v.boolean("expected true or false");
const modelName = v.pipe(name, modelNameCheck);

const pinBody = v.object({
  model: modelName,
  node_id: v.optional(name),
  wait: v.optional(flag, false),
  timeout_s: v.optional(v.pipe(v.number("expected a number of seconds"), v.minValue(0, "expected a number of seconds ≥ 0")), 30),
  force: v.optional(flag, false),
});

const toggleBody = v.object({ node_id: name, model: modelName, pinned: flag });

// DINOv2, SigLIP and CLIP run on the embedding service, not Ollama: a preloader pin would do nothing.
const VISION_EMBEDDING = /dinov2|siglip|clip/i;

/** Which models stay loaded: the admin's to change. */
const CHANGE: RouteFacts = { access: "admin", body: "json", errors: "herd" };

/** What pinning reads and changes: the config, the pins, the nodes, and what loads a model on one. */
interface Fleet {
  live: LiveConfig;
  pins: Pins;
  registry: Registry;
  warmer: Warmer;
}

export function pinsSurface(rt: Fleet) {
  const pins = rt.pins;
  return new Elysia({ name: "pins" })
    .use(routeFacts)
    .post("/fleet/pin", ({ request }) => pin(rt, pins, request), { parse: "none", facts: CHANGE })
    .delete("/fleet/pin/*", ({ params, query }) => unpin(rt, pins, params["*"], query.node_id), { facts: CHANGE })
    .get("/dashboard/api/pinned-models", () => ({ env_pins: pins.fleetWide(), per_node: pins.perNode(), max_count: rt.live.config.preloader.maxCount }), {
      facts: { access: "client", body: "json", errors: "herd" },
    })
    .post("/dashboard/api/pinned-models", ({ request }) => toggle(pins, request), { parse: "none", facts: CHANGE });
}

async function pin(rt: Fleet, pins: Pins, request: Request): Promise<Response> {
  const started = performance.now();
  const body = await validBody(request, pinBody);
  if (body instanceof Response) return body;
  const { model, node_id, wait, timeout_s, force } = body;
  // Seed 000: `ready` and `ready_after_ms` answer a caller that asked to wait, and only one.
  const answer = async (node: string | null, ready: () => Promise<boolean> | boolean, extra = {}) => {
    const waited = wait && (await ready());
    const readiness = wait ? { ready: waited, ready_after_ms: waited ? Math.round(performance.now() - started) : null } : {};
    return Response.json({ ok: true, model, pinned_node: node, ...readiness, per_node: pins.perNode(), ...extra });
  };
  if (model.startsWith(MLX_PREFIX)) {
    const server = mlxServers(rt.registry).find((s) => s.model === model.slice(MLX_PREFIX.length));
    return answer(server?.node.id ?? null, () => server?.status === "healthy", { note: "mlx: models are always-resident MLX servers (nodes[].mlx in the config); nothing to warm or pin" });
  }

  if (node_id !== undefined && !rt.registry.get(node_id)) {
    return Response.json({ error: `unknown node_id "${node_id}"`, known_nodes: rt.registry.all().map((n) => n.id) }, { status: 400 });
  }
  const node = pickNode(rt, model, node_id);
  if (node && cloudOn(node, model)) return jsonError(400, `${model} is an Ollama cloud model: it runs at ollama.com, not in ${node.id}'s memory; there is nothing to load or pin`);
  if (!node) {
    const where = node_id ? `node ${node_id} (${rt.registry.get(node_id)!.status})` : "any online node";
    return jsonError(404, `${model} is not on disk on ${where}; pull it first (ollama pull ${model})`);
  }
  const fit = force ? null : pins.coResidence(node, model);
  if (fit && !fit.fits) return overCommitted(model, node.id, fit);
  try {
    await rt.warmer.warm(node.id, loadableUrl(rt.registry, node)!, model, rt.live.config.timeouts.firstByteMs);
  } catch (e) {
    return jsonError(503, `${model} is on disk on ${node.id} but did not load: ${(e as Error).message}`);
  }
  pins.add(node.id, model);
  return answer(node.id, () => resident(rt, node.id, model, timeout_s * 1000));
}

// The given node, else the online node with the model on disk and the most free memory (unreported counts as least).
function pickNode(rt: Fleet, model: string, nodeId?: string): NodeRecord | undefined {
  const scope = nodeId === undefined ? rt.registry.all() : [rt.registry.get(nodeId)!];
  const holders = scope.filter((n) => loadableUrl(rt.registry, n) && onDisk(n, model));
  const free = (n: NodeRecord) => n.report.memory?.available_gb ?? -1;
  return holders.reduce<NodeRecord | undefined>((best, n) => (!best || free(n) > free(best) ? n : best), undefined);
}

function overCommitted(model: string, nodeId: string, fit: CoResidence): Response {
  const existing = fit.sizes.slice(0, -1);
  const sum = fit.sizes.map((s) => `${s.model} ${s.size_gb}`).join(" + ");
  const error =
    `pinning ${model} on ${nodeId} would over-commit it: ${sum} = ${fit.neededGb} GB of pins, ` +
    `but it holds ${fit.capacityGb} GB (${fit.totalGb} GB − ${OS_RESERVE_GB} GB OS reserve); ` +
    `already pinned there: ${existing.map((s) => s.model).join(", ") || "nothing"}. ` +
    `Unpin one (DELETE /fleet/pin/{model}) or pass "force": true`;
  return Response.json({ error, node_id: nodeId, needed_gb: fit.neededGb, capacity_gb: fit.capacityGb, pinned: existing }, { status: 409 });
}

// wait: true waits out the heartbeat lag, until the router's own view shows the model resident.
async function resident(rt: Fleet, nodeId: string, model: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const node = rt.registry.get(nodeId);
    if (node && loadedOn(node, model)) return true;
    if (Date.now() >= deadline) return false;
    await Bun.sleep(50);
  }
}

function unpin(rt: Fleet, pins: Pins, rawModel: string, nodeId?: string): Response {
  const named = modelInPath(rawModel, "DELETE /fleet/pin/{model}");
  if ("error" in named) return jsonError(400, named.error);
  const { model } = named;
  const unpinned = pins.remove(model, nodeId);
  if (unpinned.length) return Response.json({ ok: true, model, unpinned_from: unpinned, per_node: pins.perNode() });
  const keys = pins.configured(model, nodeId);
  const on = nodeId ? ` on ${nodeId}` : "";
  if (!keys.length) return jsonError(404, `${model} is not pinned${on}`);
  const file = rt.live.current.source.path ?? "the config";
  return jsonError(409, `${model} is pinned${on} by ${file} (pins ${keys.map((k) => `"${k}"`).join(", ")}), which herd never edits; remove it there`);
}

async function toggle(pins: Pins, request: Request): Promise<Response> {
  const body = await validBody(request, toggleBody);
  if (body instanceof Response) return body;
  const { node_id, model, pinned } = body;
  if (pinned && VISION_EMBEDDING.test(model)) {
    return jsonError(400, `${model} is a vision-embedding model (DINOv2, SigLIP, CLIP): it runs on the embedding service, not Ollama, so it cannot be pinned`);
  }
  if (pinned) pins.add(node_id, model);
  else pins.remove(model, node_id);
  // Unpinning always succeeds; a pin the config holds stays, and the answer says so.
  const held = pinned ? [] : pins.configured(model, node_id);
  return Response.json({ ok: true, per_node: pins.perNode(), ...(held.length ? { note: `${model} stays pinned on ${node_id} by the config (pins "${held[0]}")` } : {}) });
}
