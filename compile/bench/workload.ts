// The routing comparison's workload: a seeded, open-loop mix of what a small
// team sends a home fleet. Arrivals are Poisson per stream, so the same seed
// always gives the same requests at the same moments, whatever the router does.
import { prng } from "../../src/sim/replies.ts";

export const SEED = 5;
export const DURATION_MS = 24_000;

export interface Job {
  atMs: number;
  /** Which stream of the mix it belongs to. */
  kind: string;
  model: string;
  path: "/api/chat" | "/api/generate" | "/api/embed";
  body: Record<string, unknown>;
  stream: boolean;
}

type Random = () => number;

interface Stream {
  kind: string;
  /** Mean arrivals per second; each arrival is one request, or a session or burst of several. */
  perSecond: number;
  arrive(random: Random, atMs: number): Job[];
}

const SWITCH_MODELS = ["qwen3:8b", "gemma3:12b", "llama3.1:8b"];

const STREAMS: Stream[] = [
  { kind: "chat", perSecond: 1.5, arrive: (r, at) => [chat(at, "chat", "llama3.2:3b", words(r, 10, 40))] },
  // A team hitting the small model at once: 10-20 requests within half a second.
  { kind: "burst", perSecond: 1 / 6, arrive: (r, at) => times(between(r, 10, 20), () => chat(at + r() * 500, "burst", "llama3.2:3b", words(r, 10, 40))) },
  // An editor sending a file excerpt to the coding model.
  { kind: "code", perSecond: 0.35, arrive: (r, at) => [chat(at, "code", "qwen2.5-coder:32b", words(r, 200, 600))] },
  { kind: "7b", perSecond: 0.7, arrive: (r, at) => [{ atMs: at, kind: "7b", model: "mistral:7b", path: "/api/generate", body: { model: "mistral:7b", prompt: words(r, 30, 120) }, stream: true }] },
  {
    kind: "embed",
    perSecond: 1,
    arrive: (r, at) => [{ atMs: at, kind: "embed", model: "nomic-embed-text", path: "/api/embed", body: { model: "nomic-embed-text", input: times(between(r, 4, 16), () => words(r, 30, 80)) }, stream: false }],
  },
  // Someone trying another model for a few turns: a model switch the fleet has to load somewhere.
  {
    kind: "switch",
    perSecond: 1 / 7,
    arrive: (r, at) => {
      const model = SWITCH_MODELS[Math.floor(r() * SWITCH_MODELS.length)]!;
      return times(between(r, 3, 5), (i) => chat(at + i * 1000, "switch", model, words(r, 10, 60)));
    },
  },
];

/** Every request of the workload, in arrival order. */
export function workload(seed = SEED, durationMs = DURATION_MS): Job[] {
  const jobs: Job[] = [];
  for (const [i, s] of STREAMS.entries()) {
    const random = prng(seed * 1000 + i); // a generator per stream: changing one stream leaves the others' requests as they were
    for (let at = arrival(random, s.perSecond); at < durationMs; at += arrival(random, s.perSecond)) jobs.push(...s.arrive(random, at));
  }
  return jobs.filter((j) => j.atMs < durationMs).sort((a, b) => a.atMs - b.atMs);
}

// Exponential gaps between arrivals: a Poisson process.
function arrival(random: Random, perSecond: number): number {
  return (-Math.log(1 - random()) / perSecond) * 1000;
}

function chat(atMs: number, kind: string, model: string, content: string): Job {
  return { atMs, kind, model, path: "/api/chat", body: { model, messages: [{ role: "user", content }] }, stream: true };
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
