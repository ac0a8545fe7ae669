// Fleets and workloads herd was not tuned for, drawn from a seed: 3–6 Macs of chips and memory from an M1 with 8 GB to an
// M3 Ultra with 192 GB, some without a node agent, each with models on disk at random and a few of them loaded; and a
// workload of the fixed mix's streams whose models are drawn from those the fleet holds, at rates drawn and then scaled
// to a load drawn around the fixed fleets'. The same seed always gives the same fleet and the same requests.
import { defaultContext, effectiveContext, NEWEST_OLLAMA } from "../../src/fleet/ollama-releases.ts";
import { loadedBytes, specFor } from "../../src/sim/models.ts";
import { prng } from "../../src/sim/replies.ts";
import { bestMs, workOf } from "./bound.ts";
import { type BenchFleet, type Mac, simOptions } from "./fleet.ts";
import { DURATION_MS, type Job, type Mix, STREAM_KINDS, workload } from "./workload.ts";

/** Apple silicon as sold: peak memory bandwidth (GB/s), the memory sizes offered (GB), and how fast its SSD reads (GB/s). */
const CHIPS = [
  { chip: "Apple M1", bandwidthGbps: 68, memoryGb: [8, 16], diskGbps: 2 },
  { chip: "Apple M1 Pro", bandwidthGbps: 200, memoryGb: [16, 32], diskGbps: 4 },
  { chip: "Apple M1 Max", bandwidthGbps: 400, memoryGb: [32, 64], diskGbps: 5 },
  { chip: "Apple M1 Ultra", bandwidthGbps: 800, memoryGb: [64, 128], diskGbps: 5 },
  { chip: "Apple M2", bandwidthGbps: 100, memoryGb: [8, 16, 24], diskGbps: 2 },
  { chip: "Apple M2 Pro", bandwidthGbps: 200, memoryGb: [16, 32], diskGbps: 4 },
  { chip: "Apple M2 Max", bandwidthGbps: 400, memoryGb: [32, 64, 96], diskGbps: 5 },
  { chip: "Apple M2 Ultra", bandwidthGbps: 800, memoryGb: [64, 128, 192], diskGbps: 6 },
  { chip: "Apple M3", bandwidthGbps: 100, memoryGb: [8, 16, 24], diskGbps: 3 },
  { chip: "Apple M3 Pro", bandwidthGbps: 150, memoryGb: [18, 36], diskGbps: 4 },
  { chip: "Apple M3 Max", bandwidthGbps: 400, memoryGb: [36, 48, 64, 96, 128], diskGbps: 6 },
  { chip: "Apple M3 Ultra", bandwidthGbps: 819, memoryGb: [96, 192], diskGbps: 6 },
  { chip: "Apple M4", bandwidthGbps: 120, memoryGb: [16, 24, 32], diskGbps: 3 },
  { chip: "Apple M4 Pro", bandwidthGbps: 273, memoryGb: [24, 48, 64], diskGbps: 4 },
  { chip: "Apple M4 Max", bandwidthGbps: 546, memoryGb: [36, 48, 64, 128], diskGbps: 6 },
];

/** The models each stream may ask for, most likely first where the fleet holds it. */
const ROLE_MODELS: { [R in keyof Omit<Mix["models"], "switch">]: string[] } & { switch: string[] } = {
  chat: ["llama3.2:3b", "llama3.2:1b", "gemma3:4b"],
  code: ["qwen2.5-coder:32b", "qwen3:32b", "mistral-small3.1:24b", "qwen3:30b", "gemma3:12b"],
  generate: ["mistral:7b", "llama3.1:8b", "qwen3:8b"],
  embed: ["nomic-embed-text", "mxbai-embed-large", "all-minilm"],
  switch: ["qwen3:8b", "gemma3:12b", "llama3.1:8b", "gemma3:4b", "mistral:7b", "qwen2.5-coder:7b"],
  rare: ["gpt-oss:20b", "llama3.3:70b", "mistral-small3.1:24b", "gemma3:12b"],
  long: ["llama3.1:8b", "gemma3:12b", "qwen3:8b"],
  agent: ["qwen2.5-coder:7b", "qwen3:8b", "qwen3:30b"],
};
const SMALLEST = "llama3.2:1b";

export interface RandomFleet {
  fleet: BenchFleet;
  mix: Mix;
  jobs: Job[];
}

/** The fleet, the workload's mix and its requests of seed `seed`. */
export function randomFleet(seed: number): RandomFleet {
  const random = prng(seed * 7919 + 17);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const count = 3 + Math.floor(random() * 4);
  const macs: Mac[] = [];
  for (let i = 0; i < count; i++) {
    const chip = pick(CHIPS);
    const memoryGb = pick(chip.memoryGb);
    const id = `${chip.chip.replace(/^Apple /, "").toLowerCase().replace(/ /g, "-")}-${memoryGb}`;
    const taken = macs.filter((m) => m.id === id || m.id.startsWith(`${id}-`)).length;
    macs.push({ id: taken ? `${id}-${taken + 1}` : id, chip: chip.chip, memoryGb, bandwidthGbps: chip.bandwidthGbps, diskGbps: chip.diskGbps, models: [], loaded: [], agentless: random() < 0.4 });
  }
  // Each role's model: the first of its list some Mac can hold, or another of the list at random (a fleet of 8 GB Macs
  // holds none of the big ones: the smallest model stands in).
  const holdable = (model: string) => macs.some((m) => fits(model, m.memoryGb));
  const roleModel = (list: readonly string[]) => {
    const options = list.filter(holdable);
    if (!options.length) return SMALLEST;
    return random() < 0.5 ? options[0]! : pick(options);
  };
  const models: Mix["models"] = {
    chat: roleModel(ROLE_MODELS.chat),
    code: roleModel(ROLE_MODELS.code),
    generate: roleModel(ROLE_MODELS.generate),
    embed: roleModel(ROLE_MODELS.embed),
    switch: ROLE_MODELS.switch.filter(holdable).filter(() => random() < 0.6).slice(0, 3),
    rare: roleModel(ROLE_MODELS.rare),
    long: roleModel(ROLE_MODELS.long),
    agent: roleModel(ROLE_MODELS.agent),
  };
  if (!models.switch.length) models.switch = [models.long];
  const asked = [...new Set([models.chat, models.code, models.generate, models.embed, ...models.switch, models.rare, models.long, models.agent])];
  // On disk: each model a Mac can hold, three times in four; every model on at least one Mac that can.
  for (const m of macs) m.models = asked.filter((x) => fits(x, m.memoryGb) && random() < 0.75);
  for (const x of asked) {
    if (macs.some((m) => m.models.includes(x))) continue;
    pick(macs.filter((m) => fits(x, m.memoryGb))).models.push(x);
  }
  // Loaded at start: up to three of its models, in at most 60% of its memory at the context Ollama picks for it.
  for (const m of macs) {
    let used = 0;
    for (const x of shuffled(m.models, random)) {
      const bytes = autoBytes(x, m.memoryGb);
      if (m.loaded.length >= 3 || used + bytes > 0.6 * m.memoryGb * 2 ** 30 || x === models.rare) continue;
      m.loaded.push(x);
      used += bytes;
    }
  }
  // Each stream's rate drawn on its own, at times one stream far busier than the rest; then each model's streams slowed
  // where the model would keep the Macs that have it busier than a share drawn per fleet, each running one of its requests
  // at once (Ollama's default), and all of them where the fleet would be busier than the fixed fleets' (1.1–1.5: the
  // models of a Mac run side by side).
  const hot = random() < 0.6 ? pick(["code", "agent", "chat", "7b"]) : null;
  const drawn = Object.fromEntries(STREAM_KINDS.map((k) => [k, (0.4 + random() * 1.2) * (k === hot ? 2.5 : 1)]));
  const busiest = 0.35 + random() * 0.45;
  const fleet = { name: `random ${seed}`, macs };
  const first = busyness(fleet, workload(seed, DURATION_MS, { models, rates: drawn }));
  const slowed = Object.fromEntries(Object.entries(drawn).map(([k, r]) => [k, r * Math.min(1, busiest / (first.models.get(modelOf(models, k)) ?? busiest))]));
  const whole = busyness(fleet, workload(seed, DURATION_MS, { models, rates: slowed })).fleet;
  const mix = { models, rates: Object.fromEntries(Object.entries(slowed).map(([k, r]) => [k, r * Math.min(1, MAX_LOAD / whole)])) };
  return { fleet, mix, jobs: workload(seed, DURATION_MS, mix) };
}

/** The fleet's load the workload may reach: the fixed fleets' at most. */
const MAX_LOAD = 1.4;

/** The model a stream asks for (a switch stream's first). */
function modelOf(models: Mix["models"], kind: string): string {
  const byKind: Record<string, string> = { chat: models.chat, burst: models.chat, code: models.code, "7b": models.generate, embed: models.embed, switch: models.switch[0]!, rare: models.rare, long: models.long, agent: models.agent };
  return specFor(byKind[kind]!).name;
}

/**
 * How busy the workload keeps the fleet: per model, its requests' time (each alone on its fastest node with the model
 * resident) over the time of the Macs that have it on disk; and all of them over the time of every Mac.
 */
function busyness(fleet: BenchFleet, jobs: readonly Job[]): { models: Map<string, number>; fleet: number } {
  const nodes = fleet.macs.map(simOptions);
  const busyMs = new Map<string, number>();
  for (const w of workOf(jobs)) busyMs.set(w.model, (busyMs.get(w.model) ?? 0) + (bestMs(w, nodes)?.resident ?? 0));
  const hosts = (model: string) => fleet.macs.filter((m) => m.models.some((x) => specFor(x).name === model)).length;
  const total = [...busyMs.values()].reduce((a, b) => a + b, 0);
  return { models: new Map([...busyMs].map(([m, ms]) => [m, ms / DURATION_MS / hosts(m)])), fleet: total / DURATION_MS / nodes.length };
}

/** The model loads on a Mac of this memory at all (Ollama steps an automatic context down to 4096 to fit). */
function fits(model: string, memoryGb: number): boolean {
  return loadedBytes(specFor(model), 4096) <= 0.9 * memoryGb * 2 ** 30;
}

/** What the model takes loaded on such a Mac with the context Ollama picks by its memory. */
function autoBytes(model: string, memoryGb: number): number {
  const spec = specFor(model);
  return loadedBytes(spec, effectiveContext(defaultContext(NEWEST_OLLAMA, memoryGb).numCtx, spec.contextLength));
}

function shuffled<T>(xs: readonly T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
