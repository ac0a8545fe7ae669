// Image generation, fleet-wide: POST /api/generate-image (raw PNG), POST /v1/images/generations
// (OpenAI's images API: b64_json, or raw PNG for "url") and GET /api/image-models. Seed 000's
// statuses: 400 bad fields, 404 model not on any node, 502 generation failed, 503 disabled.
import { Elysia } from "elysia";
import * as v from "valibot";
import { callerOf, clientAddressOf } from "../auth/guard.ts";
import { routeFacts } from "../auth/route-facts.ts";
import { formatIssues } from "../config/problems.ts";
import type { GeneratedImage, ImageRequest } from "../core/media-request.ts";
import { type FleetImageModel, fleetImageModels, imageJobSchema, imageModelField, imageOptions, promptField } from "../fleet/image-models.ts";
import type { Pipeline } from "../pipeline/route.ts";
import { generateImage } from "../pipeline/media.ts";
import type { ServiceReply } from "../pipeline/service.ts";
import type { Served } from "../core/fleet-headers.ts";
import { takeHerdFields } from "./herd-fields.ts";
import { modelOf, readJsonObject, refusedHeaders } from "./body.ts";
import { jsonError, openaiError } from "../core/wire-errors.ts";

type Ctx = { request: Request };

const SIDES = /^(\d+)x(\d+)$/;

/** OpenAI's image request, with the seed's extra knobs (steps, guidance, seed, negative_prompt). */
const openaiImageSchema = v.object({
  model: imageModelField,
  prompt: promptField,
  size: v.optional(
    v.pipe(
      v.string(),
      v.regex(SIDES, 'expected "WIDTHxHEIGHT", e.g. "1024x1024"'),
      v.check((s) => s.split("x").every((side) => Number(side) >= 64 && Number(side) <= 4096), "expected each side from 64 to 4096 pixels"),
    ),
    "1024x1024",
  ),
  response_format: v.optional(v.picklist(["b64_json", "url"], 'expected "b64_json" or "url"'), "b64_json"),
  n: v.optional(v.literal(1, "expected 1: one image per request")),
  ...imageOptions,
});

export function imagesSurface(rt: Pipeline) {
  const ip = (ctx: Ctx) => clientAddressOf(ctx.request);
  return new Elysia({ name: "images" })
    .use(routeFacts)
    .post("/api/generate-image", (ctx: Ctx) => generateRaw(rt, ctx.request, ip(ctx)), { parse: "none", facts: { access: "client", body: "json", errors: "ollama" } })
    .post("/v1/images/generations", (ctx: Ctx) => generateOpenai(rt, ctx.request, ip(ctx)), { parse: "none", facts: { access: "client", body: "json", errors: "openai" } })
    .get("/api/image-models", () => ({ models: fleetImageModels(rt.registry).map(seedBackend) }), { facts: { access: "client", body: "json", errors: "ollama" } });
}

/** Seed 000 names two backends, "mflux (mflux/DiffusionKit via port 11436) or ollama": which CLI the image service runs is the node's detail. */
function seedBackend(m: FleetImageModel): FleetImageModel {
  return m.backend === "ollama" ? m : { ...m, backend: "mflux" };
}

type ErrorReply = (status: number, message: string, headers?: Record<string, string>) => Response;

/**
 * The request's fields checked with `schema`, and herd's tags taken out; or the 400 that names what is wrong, with the
 * X-Fleet-* set of a request refused before routing.
 */
async function parse<S extends v.GenericSchema>(request: Request, schema: S, error: ErrorReply): Promise<{ fields: v.InferOutput<S>; tags: string[] } | Response> {
  const body = await readJsonObject(request);
  if (typeof body === "string") return error(400, body, refusedHeaders({ error: body }));
  const refused = (message: string) => error(400, message, refusedHeaders(modelOf(body, message)));
  const herd = takeHerdFields(body, request.headers);
  if (typeof herd === "string") return refused(herd);
  const parsed = v.safeParse(schema, body);
  if (!parsed.success) return refused(formatIssues(parsed.issues, schema).join("; "));
  return { fields: parsed.output, tags: herd.tags };
}

/** Generates the image on the fleet; `reply` writes it, or the error, in the route's format. */
function generate(rt: Pipeline, request: Request, clientIp: string | null, tags: string[], req: ImageRequest, reply: ServiceReply<GeneratedImage>): Promise<Response> {
  const meta = { tags, clientIp, caller: callerOf(request) };
  return generateImage(rt, req, meta, reply);
}

function pngResponse(image: GeneratedImage, headers: Record<string, string>, served: Served): Response {
  return new Response(image.png, {
    headers: { "content-type": "image/png", ...headers, "X-Fleet-Model": served.servedModel, "X-Generation-Time": String(image.generationMs) },
  });
}

async function generateRaw(rt: Pipeline, request: Request, clientIp: string | null): Promise<Response> {
  const input = await parse(request, imageJobSchema, jsonError);
  if (input instanceof Response) return input;
  const { negative_prompt, ...fields } = input.fields;
  const req: ImageRequest = { surface: "ollama", kind: "image", ...fields, negativePrompt: negative_prompt, response: "png", signal: request.signal };
  return generate(rt, request, clientIp, input.tags, req, { answer: pngResponse, error: jsonError });
}

async function generateOpenai(rt: Pipeline, request: Request, clientIp: string | null): Promise<Response> {
  const input = await parse(request, openaiImageSchema, openaiError);
  if (input instanceof Response) return input;
  const { size, response_format, n: _, negative_prompt, ...fields } = input.fields;
  const [, width, height] = SIDES.exec(size)!;
  const req: ImageRequest = {
    surface: "openai",
    kind: "image",
    ...fields,
    width: Number(width),
    height: Number(height),
    negativePrompt: negative_prompt,
    response: response_format === "url" ? "png" : "b64_json",
    signal: request.signal,
  };
  const answer = (image: GeneratedImage, headers: Record<string, string>, served: Served) => {
    if (req.response === "png") return pngResponse(image, headers, served);
    const data = [{ b64_json: Buffer.from(image.png).toString("base64"), revised_prompt: req.prompt }];
    return Response.json({ created: Math.floor(Date.now() / 1000), data }, { headers: { ...headers, "X-Generation-Time": String(image.generationMs) } });
  };
  return generate(rt, request, clientIp, input.tags, req, { answer, error: openaiError });
}
