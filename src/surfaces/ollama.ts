// The Ollama API, fleet-wide. /api/chat and /api/generate go to the best node
// that has the model, the body passed through untouched so every field Ollama
// knows (format, keep_alive, think, images, options) reaches it.
import { Elysia } from "elysia";
import { candidatesFor } from "../fleet/candidates.ts";
import { normalizeModelName } from "../fleet/model-name.ts";
import type { Runtime } from "../runtime.ts";
import { VERSION } from "../version.ts";
import { jsonError } from "./errors.ts";

const GB = 1024 ** 3;

export function ollamaSurface(rt: Runtime) {
  return new Elysia({ name: "ollama" })
    .post("/api/chat", ({ request }) => proxy(rt, request, "/api/chat"), { parse: "none" })
    .post("/api/generate", ({ request }) => proxy(rt, request, "/api/generate"), { parse: "none" })
    .get("/api/version", () => ({ version: VERSION }))
    .get("/api/tags", () => ({ models: fleetTags(rt) }))
    .get("/api/ps", () => ({ models: fleetLoaded(rt) }));
}

async function proxy(rt: Runtime, request: Request, path: string): Promise<Response> {
  const text = await request.text();
  let body: { model?: unknown };
  try {
    body = JSON.parse(text);
  } catch {
    return jsonError(400, "invalid JSON body");
  }
  if (typeof body?.model !== "string" || !body.model.trim()) return jsonError(400, "model is required");
  const requested = body.model;
  const [best] = candidatesFor(rt.registry, requested);
  if (!best) {
    const known = fleetTags(rt).some((m) => m.name === normalizeModelName(requested));
    return known
      ? jsonError(503, `model "${requested}" exists but no node can serve it right now`)
      : jsonError(404, `model "${requested}" not found on any node; pull it with POST /api/pull`);
  }
  const headers = {
    "X-Fleet-Node": best.node.id,
    "X-Fleet-Requested-Model": requested,
    "X-Fleet-Served-Model": requested,
    "X-Fleet-Fallback": "false",
    "X-Fleet-Backend": "ollama",
    "X-Fleet-Retries": "0",
  };
  try {
    const upstream = await fetch(new URL(path, best.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
      signal: request.signal,
    });
    return new Response(upstream.body, {
      status: upstream.status,
      headers: { "content-type": upstream.headers.get("content-type") ?? "application/json", ...headers },
    });
  } catch (e) {
    return jsonError(502, `node ${best.node.id} failed: ${(e as Error).message}`, headers);
  }
}

/** Every model on disk on an online node, once, with the nodes that have it. */
function fleetTags(rt: Runtime) {
  const models = new Map<string, { name: string; model: string; size: number; details: { fleet_nodes: string[] } }>();
  for (const node of onlineNodes(rt)) {
    for (const m of node.ollama!.models_available) {
      const name = normalizeModelName(typeof m === "string" ? m : m.name);
      const size = typeof m === "string" ? 0 : Math.round(m.size_gb * GB);
      const entry = models.get(name) ?? { name, model: name, size, details: { fleet_nodes: [] } };
      entry.details.fleet_nodes.push(node.id);
      models.set(name, entry);
    }
  }
  return [...models.values()];
}

/** Every loaded model, one entry per node that holds it. */
function fleetLoaded(rt: Runtime) {
  return onlineNodes(rt).flatMap((node) =>
    node.ollama!.models_loaded.map((m) => ({ name: m.name, model: m.name, size: Math.round(m.size_gb * GB), fleet_node: node.id })),
  );
}

function onlineNodes(rt: Runtime) {
  return rt.registry.all().filter((n) => n.status === "online" && n.ollama?.reachable);
}
