// The best any routing could do with a workload on a fleet: each request alone on the node that serves it soonest,
// nothing ahead of it in any queue, priced by the simulated nodes' own cost model (src/sim: a load is the runner's
// start and the file's read, prefill a tenth of the token interval per token not already in a KV cache, decode the
// model's rate for the node's bandwidth). Twice: with every model resident wherever it fits, and with a first load of
// each model, paid by its first request on a node that does not hold it at start. A real request also waits for
// slots and loads and crosses herd and HTTP, so no strategy's percentile can be below the bound's.
import { decodeTokensPerSecond, loadedBytes, normalizeName, specFor } from "../../src/sim/models.ts";
import { embedInputs, embedTokens, generateMessages } from "../../src/sim/ollama-api.ts";
import { promptEvalMs, runReply } from "../../src/sim/ollama-run.ts";
import { commonPrefix, skippedPrefill } from "../../src/sim/prompt-cache.ts";
import { parseMessages, parseTools, promptTokenIds, replyTokenIds } from "../../src/sim/replies.ts";
import { loadMs } from "../../src/sim/residency.ts";
import { DEFAULT_TOKENS_PER_SECOND } from "../../src/sim/server.ts";
import type { MacSim } from "./fleet.ts";
import { type Job, nextTurn } from "./workload.ts";

/** What one request asks of whichever node serves it. */
export interface Work {
  model: string;
  embed: boolean;
  /** Tokens to prefill: a prompt's beyond the longest prefix any earlier request of its model left in a cache; an embedding's inputs. */
  prefillTokens: number;
  /** Tokens generated (none for an embedding). */
  replyTokens: number;
  /** The workload's first request of its model: where the model is not resident at start, it pays the load. */
  firstOfModel: boolean;
}

/** Per request, in milliseconds: the fastest node's time with the model resident, and counting its first load. */
export interface Best {
  resident: number;
  withLoad: number;
}

/**
 * Each request's work, in replay's order (a session's turns one after another): a session's later turns are built
 * from the sim's own answers, as replay builds them from the answers it gets.
 */
export function workOf(jobs: readonly Job[]): Work[] {
  const sequences = new Map<string, number[][]>(); // per model, every prompt and answer a cache could still hold
  const seen = new Set<string>();
  const work = (job: Job, body: Record<string, unknown>): { work: Work; answer: string } => {
    const spec = specFor(job.model);
    const firstOfModel = !seen.has(spec.name);
    seen.add(spec.name);
    if (job.path === "/api/embed") {
      return { work: { model: spec.name, embed: true, prefillTokens: embedTokens(embedInputs(body.input)), replyTokens: 0, firstOfModel }, answer: "" };
    }
    const messages = job.path === "/api/chat" ? parseMessages(body.messages) : generateMessages(body);
    const reply = runReply({ spec, model: job.model, verb: job.path === "/api/chat" ? "chat" : "generate", body, messages, tools: parseTools(body.tools), format: body.format });
    const prompt = promptTokenIds(messages);
    const held = sequences.get(spec.name) ?? [];
    const shared = Math.max(0, ...held.map((s) => commonPrefix(s, prompt)));
    sequences.set(spec.name, [...held, [...prompt, ...replyTokenIds(reply)]]);
    const prefillTokens = prompt.length - skippedPrefill(shared, prompt.length);
    return { work: { model: spec.name, embed: false, prefillTokens, replyTokens: reply.evalCount, firstOfModel }, answer: reply.content.join("") };
  };
  return jobs.flatMap((job) => {
    const first = work(job, job.body);
    const turns = [first.work];
    let [messages, answer] = [job.body.messages as unknown[], first.answer];
    for (const next of job.session?.next ?? []) {
      messages = nextTurn(messages, answer, next);
      const turn = work(job, { ...job.body, messages });
      turns.push(turn.work);
      answer = turn.answer;
    }
    return turns;
  });
}

/** The fastest node's time for the work alone, or null where no node has the model on disk and memory for it. */
export function bestMs(work: Work, nodes: readonly MacSim[]): Best | null {
  const times = nodes.flatMap((n) => {
    const ms = serviceMs(work, n);
    if (ms === null) return [];
    const cold = work.firstOfModel && !n.loaded.some((m) => normalizeName(m) === work.model);
    return [{ resident: ms, withLoad: ms + (cold ? loadMs(specFor(work.model), n) : 0) }];
  });
  if (!times.length) return null;
  return { resident: Math.min(...times.map((t) => t.resident)), withLoad: Math.min(...times.map((t) => t.withLoad)) };
}

// A sim's time for the work with the model resident and a slot free: prefill, then each token at the node's interval
// (an Ollama sim embeds at its plain token rate, and generates at the model's rate for its bandwidth).
function serviceMs(work: Work, node: MacSim): number | null {
  const spec = specFor(work.model);
  if (!node.models.some((m) => normalizeName(m) === work.model) || loadedBytes(spec) > node.memoryGb * 2 ** 30) return null;
  const rate = work.embed ? (node.tokensPerSecond ?? DEFAULT_TOKENS_PER_SECOND) : decodeTokensPerSecond(spec, node.memoryBandwidthGbps);
  const tokenIntervalMs = 1000 / rate;
  return promptEvalMs(work.prefillTokens, { tokenIntervalMs }) + work.replyTokens * tokenIntervalMs;
}

/**
 * A latency target (finish-time ÷ score at or under `target`) read against the bound: met; else unreachable where
 * even the bound ÷ score is over it (with every model resident: by any routing; with first loads: by any that loads
 * models when they are asked for, not before); else missed.
 */
export function verdict(ft: number, score: number, bound: { resident: number; withLoads: number }, target: number): string {
  if (ft / score <= target) return "met";
  if (bound.resident / score > target) return "unreachable";
  if (bound.withLoads / score > target) return "unreachable without loading ahead of demand";
  return "missed";
}
