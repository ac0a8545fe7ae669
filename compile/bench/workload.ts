// The routing comparison's workload: a seeded, open-loop mix of what a small
// team sends a home fleet. Arrivals are Poisson per stream, so the same seed
// always gives the same requests at the same moments, whatever the router does;
// an agent session's turns follow each other (each waits for the last answer).
import { prng } from "../../src/sim/replies.ts";

export const SEEDS = [5, 6, 7];
export const DURATION_MS = 30_000;

export interface Job {
  atMs: number;
  /** Which stream of the mix it belongs to. */
  kind: string;
  model: string;
  path: "/api/chat" | "/api/generate" | "/api/embed";
  body: Record<string, unknown>;
  stream: boolean;
  /** An agent session: the body's messages are its first turn; each later turn resends the conversation, the answer and the next message. */
  session?: AgentSession;
}

export interface AgentSession {
  /** What the agent sends after each answer (a tool's output), and how long it works on an answer before it does. */
  next: { content: string; afterMs: number }[];
}

/** A session's next turn: the whole conversation resent, with the answer to the last turn and the agent's next message. */
export function nextTurn(messages: readonly unknown[], answer: string, next: AgentSession["next"][number]): unknown[] {
  return [...messages, { role: "assistant", content: answer }, { role: "user", content: next.content }];
}

type Random = () => number;

interface Stream {
  kind: string;
  /** Mean arrivals per second; each arrival is one request, or a session or burst of several. */
  perSecond: number;
  arrive(random: Random, atMs: number): Job[];
}

/** The models each stream asks for, and how often it arrives (× its usual rate): the fixed fleets' mix, or one drawn from a seed. */
export interface Mix {
  models: { chat: string; code: string; generate: string; embed: string; switch: readonly string[]; rare: string; long: string; agent: string };
  /** Per stream kind, × its rate (1 when absent). */
  rates?: Readonly<Record<string, number>>;
}

// A 12 GB model (13.7 GiB resident) no node has loaded at start: where it lands decides how its few requests fare.
export const RARE_MODEL = "gpt-oss:20b";
export const AGENT_MODEL = "qwen2.5-coder:7b";
/** The fixed fleets' mix. */
export const FIXED_MIX: Mix = {
  models: {
    chat: "llama3.2:3b",
    code: "qwen2.5-coder:32b",
    generate: "mistral:7b",
    embed: "nomic-embed-text",
    switch: ["qwen3:8b", "gemma3:12b", "llama3.1:8b"],
    rare: RARE_MODEL,
    long: "llama3.1:8b",
    agent: AGENT_MODEL,
  },
};

const streams = ({ models: m }: Mix): Stream[] => [
  { kind: "chat", perSecond: 1.5, arrive: (r, at) => [chat(at, "chat", m.chat, words(r, 10, 40))] },
  // A team hitting the small model at once: 10-20 requests within half a second.
  { kind: "burst", perSecond: 1 / 6, arrive: (r, at) => times(between(r, 10, 20), () => chat(at + r() * 500, "burst", m.chat, words(r, 10, 40))) },
  // An editor sending a file excerpt to the coding model.
  { kind: "code", perSecond: 0.35, arrive: (r, at) => [chat(at, "code", m.code, words(r, 200, 600))] },
  { kind: "7b", perSecond: 0.7, arrive: (r, at) => [{ atMs: at, kind: "7b", model: m.generate, path: "/api/generate", body: { model: m.generate, prompt: words(r, 30, 120) }, stream: true }] },
  {
    kind: "embed",
    perSecond: 1,
    arrive: (r, at) => [{ atMs: at, kind: "embed", model: m.embed, path: "/api/embed", body: { model: m.embed, input: times(between(r, 4, 16), () => words(r, 30, 80)) }, stream: false }],
  },
  // Someone trying another model for a few turns: a model switch the fleet has to load somewhere.
  {
    kind: "switch",
    perSecond: 1 / 7,
    arrive: (r, at) => {
      const model = m.switch[Math.floor(r() * m.switch.length)]!;
      return times(between(r, 3, 5), (i) => chat(at + i * 1000, "switch", model, words(r, 10, 60)));
    },
  },
  { kind: "rare", perSecond: 1 / 8, arrive: (r, at) => [capped(chat(at, "rare", m.rare, words(r, 20, 80)), 200)] },
  // A document pasted whole to be summarised.
  { kind: "long", perSecond: 0.12, arrive: (r, at) => [chat(at, "long", m.long, words(r, 1000, 2500))] },
  // A coding agent: the same system prompt in every session (agents ship one), its own task, then tool outputs turn by turn.
  {
    kind: "agent",
    perSecond: 1 / 5,
    arrive: (r, at) => {
      const first = capped(chat(at, "agent", m.agent, words(r, 20, 60)), AGENT_REPLY_TOKENS);
      first.body.messages = [{ role: "system", content: agentSystem() }, ...(first.body.messages as unknown[])];
      const next = times(between(r, 3, 7), () => ({ content: words(r, 30, 120), afterMs: between(r, 200, 1500) }));
      return [{ ...first, session: { next } }];
    },
  },
];
/** The streams' kinds, in the mix's order. */
export const STREAM_KINDS = streams(FIXED_MIX).map((s) => s.kind);

// An agent's answers are short (a tool call, a line of reasoning).
export const AGENT_REPLY_TOKENS = 60;
const agentSystem = () => words(prng(1), 600, 600);

/** Every request of the workload (an agent session as its first turn), in arrival order. */
export function workload(seed: number, durationMs = DURATION_MS, mix = FIXED_MIX): Job[] {
  const jobs: Job[] = [];
  for (const [i, s] of streams(mix).entries()) {
    const random = prng(seed * 1000 + i); // a generator per stream: changing one stream leaves the others' requests as they were
    const perSecond = s.perSecond * (mix.rates?.[s.kind] ?? 1);
    for (let at = arrival(random, perSecond); at < durationMs; at += arrival(random, perSecond)) jobs.push(...s.arrive(random, at));
  }
  return jobs.filter((j) => j.atMs < durationMs).sort((a, b) => a.atMs - b.atMs);
}

/** The competing sessions' workload: how many agents work at once, each in its own session. */
export const COMPETING_SESSIONS = 6;

/**
 * Agents working at once on one coding model, nothing else: each session starts within the first 5 s, opens with the
 * system prompt every session shares and a task of its own, then 6–10 more turns, each with a tool's output of
 * 100–300 words, so the prompts grow past 3,000 tokens and every turn competes with the other sessions' for slots.
 */
export function competingSessions(seed: number): Job[] {
  const random = prng(seed * 1000 + STREAM_KINDS.length);
  return times(COMPETING_SESSIONS, () => {
    const first = capped(chat(random() * 5000, "agent", AGENT_MODEL, words(random, 20, 60)), AGENT_REPLY_TOKENS);
    first.body.messages = [{ role: "system", content: agentSystem() }, ...(first.body.messages as unknown[])];
    const next = times(between(random, 6, 10), () => ({ content: words(random, 100, 300), afterMs: between(random, 200, 1500) }));
    return { ...first, session: { next } };
  }).sort((a, b) => a.atMs - b.atMs);
}

// Exponential gaps between arrivals: a Poisson process.
function arrival(random: Random, perSecond: number): number {
  return (-Math.log(1 - random()) / perSecond) * 1000;
}

function chat(atMs: number, kind: string, model: string, content: string): Job {
  return { atMs, kind, model, path: "/api/chat", body: { model, messages: [{ role: "user", content }] }, stream: true };
}

function capped(job: Job, tokens: number): Job {
  return { ...job, body: { ...job.body, options: { num_predict: tokens } } };
}

// The sim counts a prompt's tokens by its words.
function words(random: Random, min: number, max: number): string {
  return times(between(random, min, max), () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]!).join(" ");
}

function between(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

function times<T>(n: number, make: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => make(i));
}

const VOCABULARY = "the a function returns value when request node model memory fleet queue token stream error test build config route time cache".split(" ");
