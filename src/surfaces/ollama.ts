// The Ollama API, fleet-wide. Requests go to the best node that has the model;
// the body is decoded (ollama-request.ts) with the fields herd does not model
// kept, so every field Ollama knows (raw, template, truncate, …) reaches it,
// and its NDJSON lines come back byte for byte (see ollama-codec.ts).
import { Elysia } from "elysia";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { keyRefusal } from "../auth/refusal.ts";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { fleetImageModels, isOllamaImageModel } from "../fleet/image-models.ts";
import { type InferenceRequest, type RequestKind, needsOf } from "../core/request.ts";
import { normalizeModelName } from "../fleet/model-name.ts";
import { MLX_PREFIX, modelsOnDisk, reachableNodes, residentMlx } from "../fleet/catalog.ts";
import { GB, type TagEntry } from "../fleet/node-models.ts";
import { onDisk } from "../fleet/registry.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { sessionOf } from "../core/session.ts";
import { estimatePrompt } from "../core/tokens.ts";
import { headerValue } from "../core/fleet-headers.ts";
import { nativeEmbed } from "../pipeline/native-embed.ts";
import { type Pipeline, route } from "../pipeline/route.ts";
import { lowestVersion } from "../version.ts";
import { modelOf, readJsonObject, refusedHeaders } from "./body.ts";
import { dimensionsOf, embedBody } from "./embed-input.ts";
import { jsonError } from "../core/wire-errors.ts";
import { ndjson } from "./ollama-codec.ts";
import { ollamaConversation } from "./ollama-request.ts";

/** Ollama's API: for any client, in Ollama's error format. */
const API: RouteFacts = { access: "client", body: "json", errors: "ollama" };

export function ollamaSurface(rt: Pipeline) {
  const proxy = (kind: RequestKind, path: string) => ({ request }: { request: Request }) => handle(rt, request, kind, path, clientAddressOf(request));
  return new Elysia({ name: "ollama" })
    .use(routeFacts)
    .post("/api/chat", proxy("chat", "/api/chat"), { parse: "none", facts: API })
    .post("/api/generate", proxy("generate", "/api/generate"), { parse: "none", facts: API })
    .post("/api/embed", proxy("embed", "/api/embed"), { parse: "none", facts: API })
    .post("/api/embeddings", proxy("embed", "/api/embeddings"), { parse: "none", facts: API })
    .post("/api/show", ({ request }) => show(rt, request), { parse: "none", facts: API })
    .get("/api/version", () => fleetVersion(rt), { facts: API })
    .get("/api/tags", () => ({ models: fleetTags(rt) }), { facts: API })
    .get("/api/ps", () => ({ models: fleetLoaded(rt) }), { facts: API });
}

async function handle(rt: Pipeline, request: Request, kind: RequestKind, path: string, clientIp: string | null): Promise<Response> {
  const read = await readJsonObject(request);
  const named = typeof read === "string" ? { error: read } : modelOf(read, "model is required");
  const refuse = (message: string) => jsonError(400, message, refusedHeaders(named));
  if (typeof read === "string") return refuse(read);
  if ("error" in named) return refuse(named.error);
  const { model } = named;
  const body = kind === "embed" ? embedBody(read, path === "/api/embeddings") : read;
  if (typeof body === "string") return refuse(body);
  if (body.stream !== undefined && typeof body.stream !== "boolean") return refuse("stream: expected true or false");
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return refuse(herd);
  const conversation = ollamaConversation(body, kind);
  if (typeof conversation === "string") return refuse(conversation);
  const stream = kind !== "embed" && body.stream !== false;
  const meta = { tags: herd.tags, clientIp, caller: callerOf(request) };
  if (kind === "embed") {
    const legacy = path === "/api/embeddings";
    // embedBody checked the text(s) and put them under the name the route reads.
    const input = (legacy ? body.prompt : body.input) as string | string[];
    const embedded = nativeEmbed(rt, { surface: "ollama", kind, model, input, ...dimensionsOf(body), legacy, signal: request.signal }, meta, ndjson(kind, false));
    if (embedded) return embedded;
  }
  const req: InferenceRequest = {
    ...conversation,
    surface: "ollama",
    kind,
    path,
    model,
    fallbackModels: herd.fallbackModels,
    strict: herd.strict,
    needs: needsOf(conversation),
    promptTokens: estimatePrompt(conversation),
    session: kind === "embed" ? undefined : sessionOf(conversation, request.headers),
    stream,
    signal: request.signal,
  };
  return route(rt, req, ndjson(kind, stream), meta);
}

/**
 * Model details come from any online node that has the model; nothing runs, so no queue slot is taken. A client
 * key pays one request of its per-minute budget and may read only the models it may use.
 */
async function show(rt: Pipeline, request: Request): Promise<Response> {
  const caller = callerOf(request);
  const over = caller?.take();
  if (over) return keyRefusal("ollama", over);
  const body = await readJsonObject(request);
  if (typeof body === "string") return jsonError(400, body);
  const named = modelOf(body, "model is required", ["model", "name"]);
  if ("error" in named) return jsonError(400, named.error);
  const { model } = named;
  const wanted = normalizeModelName(model);
  if (caller && !caller.mayServe(wanted)) return keyRefusal("ollama", caller.modelDenied(model));
  const node = reachableNodes(rt.registry).find((n) => onDisk(n, wanted));
  if (!node) return jsonError(404, `model "${wanted}" not found on any node`);
  const headers = { "X-Fleet-Node": node.id, "X-Fleet-Requested-Model": headerValue(model), "X-Fleet-Served-Model": headerValue(wanted), "X-Fleet-Backend": "ollama", "X-Fleet-Fallback": "false", "X-Fleet-Retries": "0" };
  try {
    const res = await fetch(new URL("/api/show", rt.registry.ollamaUrl(node)!), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...body, model: wanted }),
      signal: AbortSignal.timeout(rt.live.config.timeouts.connectMs),
    });
    return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json", ...headers } });
  } catch (e) {
    return jsonError(502, `node ${node.id} did not answer /api/show: ${(e as Error).message}`, headers);
  }
}

/**
 * The fleet's Ollama version: the oldest an online node runs, so a client's version check (Codex --oss wants
 * 0.13.4 or newer) holds on whichever node it is sent to. herd's own version is in X-Herd-Version.
 */
function fleetVersion(rt: Pipeline): { version: string } | Response {
  const reachable = reachableNodes(rt.registry);
  const version = lowestVersion(reachable.map((n) => n.ollama!.version));
  if (version) return { version };
  const online = rt.registry.all().filter((n) => n.status === "online").length;
  const why = !online
    ? "no node is online"
    : !reachable.length
      ? `none of the ${online} online node(s) reaches its Ollama`
      : "the Ollama of the online nodes did not say its version";
  return jsonError(503, `no online node reports an Ollama version: ${why}`);
}

// What Ollama sends for a field a report left out (a seed 000 agent lists names only; a model just pulled is
// listed before the next report; an MLX server or an image service has no Ollama entry): Go's zero values,
// so a client that types every field (ollama-js) still gets each one.
const ZERO_TIME = "0001-01-01T00:00:00Z";
const NO_DETAILS = { parent_model: "", format: "", family: "", families: [], parameter_size: "", quantization_level: "" };

/**
 * Every model on disk in the fleet, once: the /api/tags entry of the first node that has it, whole, with the
 * nodes that have it in details.fleet_nodes; image models say so (seed 000: details.type).
 */
function fleetTags(rt: Pipeline) {
  const tag = (name: string, entry: TagEntry, details: Record<string, unknown>) => ({
    model: name,
    modified_at: ZERO_TIME,
    size: 0,
    digest: "",
    ...entry,
    name,
    details: { ...NO_DETAILS, ...entry.details, ...details },
  });
  const image = (name: string) => (isOllamaImageModel(name) ? { type: "image" } : {});
  const onDisk = modelsOnDisk(rt.registry).map((m) => tag(m.name, m.entry, { fleet_nodes: m.nodes, ...image(m.name) }));
  const generators = fleetImageModels(rt.registry).filter((m) => m.backend !== "ollama");
  return [...onDisk, ...generators.map((m) => tag(m.name, { name: m.name }, { fleet_nodes: m.fleet_nodes, type: "image" }))];
}

/**
 * Every loaded model, one entry per node that holds it: that node's /api/ps entry, whole, and the node (fleet_node);
 * then each serving MLX server's model, always resident, as /api/tags lists it.
 */
function fleetLoaded(rt: Pipeline) {
  const mlx = residentMlx(rt.registry).map((s) => {
    const name = MLX_PREFIX + s.model;
    const size = Math.round(s.model_size_gb * GB);
    // The context its model was trained for, as the node's agent read it (mlx_lm has no num_ctx); 0 while unknown.
    return { model: name, digest: "", expires_at: ZERO_TIME, size_vram: size, context_length: s.context_length ?? 0, name, size, details: NO_DETAILS, fleet_node: s.node.id };
  });
  const ollama = reachableNodes(rt.registry).flatMap((node) =>
    node.ollama!.models_loaded.map(({ size_gb, ...m }) => ({
      model: m.name,
      digest: "",
      expires_at: ZERO_TIME,
      size_vram: 0,
      context_length: 0,
      ...m,
      size: m.size ?? Math.round(size_gb * GB), // seed 000's agents report size_gb alone
      details: { ...NO_DETAILS, ...m.details },
      fleet_node: node.id,
    })),
  );
  return [...ollama, ...mlx];
}
