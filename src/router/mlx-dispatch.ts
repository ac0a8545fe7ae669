// Routing a request to an MLX server: the healthy servers of the model on
// online nodes, least busy first; admission control on each server's queue
// (a full queue answers 503 + Retry-After); and the wall clock, whose expiry
// before the first byte is a 413 with the /compact hint. The attempt loop
// skips a server that fails before answering for the next, as with Ollama nodes.
import { lineLimits } from "../backends/lines.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import { WallClockTimeout, callMlx, maxTokens, openAiBody } from "../backends/mlx.ts";
import { RouteError } from "../errors.ts";
import { MLX_PREFIX, type MlxServer, mlxServers } from "../fleet/catalog.ts";
import { attempt } from "./attempt.ts";
import type { InferenceRequest } from "../core/request.ts";
import type { Routed, RouterDeps } from "./routed.ts";

export async function dispatchMlx(deps: RouterDeps, req: InferenceRequest, model: string, signal: AbortSignal): Promise<Routed> {
  const { config, registry, queues } = deps;
  const servedAs = MLX_PREFIX + model;
  const retryAfter = config.mlx.retryAfterSeconds;
  const { kind } = req;
  if (kind === "embed") throw new RouteError(400, `${servedAs} is a chat model on mlx_lm.server; it does not embed`);
  const request = openAiBody(kind, req);
  if (typeof request === "string") throw new RouteError(400, request);

  const servers = mlxServers(registry).filter((s) => s.model === model);
  if (!servers.length) throw new RouteError(404, `no node runs an MLX server for "${model}"; add it to a node's mlx servers in herd.config.ts (nodes[].mlx)`);
  const load = (s: MlxServer) => queues.view(s.node.id, servedAs);
  const ready = servers
    .filter((s) => s.status === "healthy" && s.url && s.node.status === "online" && !registry.isDraining(s.node))
    .sort((a, b) => load(a).pending + load(a).inFlight - (load(b).pending + load(b).inFlight) || a.node.id.localeCompare(b.node.id));
  if (!ready.length) {
    const states = servers.map((s) => `${s.node.id}:${s.port} ${registry.isDraining(s.node) ? "draining" : s.node.status === "online" ? s.status : s.node.status}${s.status_reason ? ` (${s.status_reason})` : ""}`);
    throw new RouteError(503, `${servedAs} has no MLX server ready to serve it: ${states.join("; ")}`, 0, [], retryAfter);
  }

  const candidates = ready.map((s) => ({ nodeId: s.node.id, model: servedAs, url: s.url!, contextLength: s.context_length }));
  return attempt(candidates, {
    queues,
    maxRetries: config.routing.maxRetries,
    waitMs: config.timeouts.firstByteMs,
    signal,
    slots: { parallel: () => config.mlx.maxInFlightPerModel },
    maxPending: config.mlx.maxQueueDepth,
    async call({ nodeId, url, contextLength }, slot, excluded) {
      const call = await callMlx(url, { ...request, max_tokens: maxTokens(req, contextLength) }, {
        servedAs,
        wallClockMs: config.mlx.wallClockTimeoutMs,
        lines: lineLimits(config),
        whole: nodeAnswerCap(config),
        signal,
        onUsage: (usage) => queues.recordUsage(nodeId, servedAs, usage),
      }).catch((e) => {
        // Never retried: the client decides whether to resubmit with a shorter context (seed 000).
        throw e instanceof WallClockTimeout ? new RouteError(413, e.message, 0, [], undefined, nodeId, { backend: "mlx", model: servedAs }) : e;
      });
      return {
        call,
        backend: "mlx",
        nodeId,
        servedModel: servedAs,
        score: null,
        breakdown: null,
        retries: excluded.length,
        fallback: false,
        excluded,
        slot,
        contextOverflow: null,
        thinkingBudget: null,
        adjustments: [],
        cachedPromptTokens: 0,
        contextTokens: null,
      };
    },
    exhausted({ failures, excluded, full, retries }) {
      if (full && !failures.length) {
        const message = `${servedAs} is busy: its MLX server queue holds ${config.mlx.maxQueueDepth} waiting requests (mlx.maxQueueDepth); retry after ${retryAfter} s`;
        return new RouteError(503, message, retries, excluded, retryAfter);
      }
      return new RouteError(503, `${servedAs}: no MLX server could serve it: ${failures.join("; ")}`, retries, excluded, retryAfter);
    },
  });
}
