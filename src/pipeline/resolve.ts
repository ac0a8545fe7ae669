// The model a coding agent's id stands for (claude-sonnet-4-5, gpt-5-codex → a local model;
// router/model-resolution.ts), found before admission so the key's model check sees what will
// serve. An id nothing can serve is a 404, in the words of the surface that asked.
import type { Config } from "../config/schema.ts";
import type { KeyGrant } from "../core/client-key.ts";
import type { InferenceRequest } from "../core/request.ts";
import { RouteError } from "../errors.ts";
import type { Registry } from "../fleet/registry.ts";
import { type Resolution, resolveModel } from "../router/model-resolution.ts";

interface Words {
  notFound(asked: string, config: Config): string;
  /** The trace's `resolution`. */
  note(asked: string, resolution: Resolution): string;
}

const ANTHROPIC: Words = {
  notFound: (asked, config) =>
    `model "${asked}" not found: no modelMap entry, no local model of that name, and ${config.anthropic.autoRoute ? "no online node has a chat model to auto-route it to" : "anthropic.autoRoute is off"}`,
  note: (asked, r) => `"${asked}": ${r.reason}`,
};

const RESPONSES: Words = {
  notFound: (asked) => `model "${asked}" is neither mapped (modelMap) nor on any online node, and nothing could be auto-routed to it`,
  note: (asked, r) => `"${asked}" → ${r.model}: ${r.reason}`,
};

/** Sets the request's model to what its agent id resolves to (the id kept as `requested`), or says why it cannot. */
export function resolveAgentModel(registry: Registry, config: Config, req: InferenceRequest, grant: KeyGrant | null): RouteError | null {
  if (!req.resolve) return null;
  const asked = req.model;
  const words = req.surface === "anthropic" ? ANTHROPIC : RESPONSES;
  const resolution = resolveModel(registry, config, asked, req.needs, req.strict, grant);
  if (!resolution) return new RouteError(404, words.notFound(asked, config));
  req.requested = asked;
  req.model = resolution.model;
  req.resolution = words.note(asked, resolution);
  return null;
}
