// What the native and the OpenAI-compatible routes of a simulated Ollama node
// share: the node's state, model lookup, and the start and end of a generation.
import type { Disk } from "./disk.ts";
import { decodeTokensPerSecond, type SimModelSpec } from "./models.ts";
import { OllamaError } from "./ollama-http.ts";
import type { CacheSlot } from "./prompt-cache.ts";
import { reply, replyTokenIds, type ChatMessage, type Reply, type ToolSpec } from "./replies.ts";
import { askedContext, fitPrompt } from "./ollama-context.ts";
import type { Residency, Resident } from "./residency.ts";
import type { Frame, RequestContext } from "./server.ts";

/** The state every route handler of one node works on. */
export interface OllamaNode {
  disk: Disk;
  residency: Residency;
  /** What GET /api/version answers. */
  version: string;
  /** Set: token rates follow each model's size (see decodeTokensPerSecond). */
  memoryBandwidthGbps?: number;
}

export interface RunRequest {
  spec: SimModelSpec;
  /** The model as the client spelled it: errors and replies echo it. */
  model: string;
  verb: "chat" | "generate";
  /** The native request fields that steer a run: think and options.num_predict / num_ctx. */
  body: Record<string, unknown>;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** "json" or a JSON schema the answer must follow. */
  format: unknown;
  /** The request's keep_alive; undefined when it sends none. */
  keepAliveMs?: number;
}

export interface Run {
  resident: Resident;
  model: string;
  reply: Reply;
  /** The whole prompt, as Ollama's prompt_eval_count reports it, cache hit or not. */
  promptTokens: number;
  /** The prompt's tokens and the KV cache slot it runs in, which keeps them (and the answer) for the next request. */
  prompt: number[];
  slot: CacheSlot;
  /** When the request came in, its runner was ready, it got a parallel slot, and its prompt was evaluated. */
  timing: { began: number; loaded: number; slotted: number; prompted: number };
}

// A model on disk, or Ollama's 404 naming the model as the client spelled it.
export function onDisk(node: OllamaNode, model: string): SimModelSpec {
  const found = node.disk.get(model);
  if (!model || !found) throw new OllamaError(404, `model '${model}' not found`);
  return found.spec;
}

/** The model a request must name, on disk. */
export function namedModel(node: OllamaNode, model: string): SimModelSpec {
  if (!model) throw new OllamaError(400, "model is required");
  return onDisk(node, model);
}

// Fixes the reply (checking capabilities first), loads the model, and spends
// the prompt-evaluation time before the first byte, so time-to-first-token
// looks real.
export async function startRun(node: OllamaNode, req: RunRequest, ctx: RequestContext): Promise<Run> {
  const { spec, model, body, messages } = req;
  const answer = runReply(req);
  if (node.memoryBandwidthGbps) ctx.setTokensPerSecond(decodeTokensPerSecond(spec, node.memoryBandwidthGbps));
  const timing = { began: performance.now(), loaded: 0, slotted: 0, prompted: 0 };
  const r = await node.residency.acquire(spec, askedContext(body), req.keepAliveMs, ctx, () => (timing.loaded = performance.now()));
  timing.slotted = performance.now();
  let prompt: number[];
  try {
    prompt = fitPrompt(messages, r.numCtx, body);
  } catch (e) {
    node.residency.release(r);
    throw e;
  }
  const { slot, cached } = r.slots.claim(prompt);
  if (cached > 0) ctx.count("promptCacheHits");
  ctx.count("cachedPromptTokens", cached);
  try {
    // Only what follows the slot's cached prefix is evaluated.
    await ctx.sleep(promptEvalMs(prompt.length - cached, ctx));
  } catch (e) {
    r.slots.release(slot, prompt.slice(0, cached));
    node.residency.release(r);
    throw e;
  }
  timing.prompted = performance.now();
  return { resident: r, model, reply: answer, promptTokens: prompt.length, prompt, slot, timing };
}

/** The reply a run gives (fixed by the request alone: its messages, thinking and token cap), or Ollama's refusal of a capability the model lacks. */
export function runReply(req: RunRequest): Reply {
  const thinks = checkCapabilities(req);
  const { num_predict } = (req.body.options ?? {}) as { num_predict?: unknown };
  const maxTokens = typeof num_predict === "number" && num_predict >= 0 ? num_predict : undefined;
  return reply({ model: req.spec.name, messages: req.messages, think: thinks && req.body.think !== false, format: req.format, tools: req.tools, maxTokens });
}

/** Frames that hand the model back to the scheduler once the last is sent (or the stream dies). */
export async function* releasing(node: OllamaNode, run: Run, frames: AsyncGenerator<Frame>): AsyncGenerator<Frame> {
  try {
    yield* frames;
  } finally {
    run.resident.slots.release(run.slot, [...run.prompt, ...replyTokenIds(run.reply)]);
    node.residency.release(run.resident);
  }
}

// Prompt processing runs roughly ten times faster than generation.
export function promptEvalMs(tokens: number, ctx: Pick<RequestContext, "tokenIntervalMs">): number {
  return (tokens * ctx.tokenIntervalMs) / 10;
}

/** Ollama's capability checks, in its order, made before anything runs or loads; returns whether the model can think. */
export function checkCapabilities({ spec, model, verb, body, tools }: Pick<RunRequest, "spec" | "model" | "verb" | "body" | "tools">): boolean {
  if (!spec.capabilities.includes("completion")) throw new OllamaError(400, `"${model}" does not support ${verb}`);
  if (tools.length > 0 && !spec.capabilities.includes("tools")) {
    throw new OllamaError(400, `${qualifiedName(spec.name)} does not support tools`);
  }
  const thinks = spec.capabilities.includes("thinking");
  if (body.think === true && !thinks) throw new OllamaError(400, `"${model}" does not support thinking`);
  if (typeof body.think === "string" && spec.family !== "gptoss") {
    throw new OllamaError(400, `think value "${body.think}" is not supported for this model`);
  }
  return thinks;
}

// Capability errors name the model by its fully qualified registry name.
function qualifiedName(name: string): string {
  const parts = name.split("/");
  return parts.length === 1 ? `registry.ollama.ai/library/${name}` : parts.length === 2 ? `registry.ollama.ai/${name}` : name;
}
