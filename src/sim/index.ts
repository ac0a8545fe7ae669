// Simulated inference nodes for demos, tests and benchmarks: Ollama and
// mlx_lm.server speaking their real wire formats, with deterministic replies,
// model residency, fault injection and a /_sim control surface
// (GET for state, POST to patch faults / models / loaded / tokensPerSecond /
// machine).
import type { Faults } from "./faults.ts";
import type { SimMachine } from "./machine.ts";
import { startMlxServer, type SimMlxOptions } from "./mlx.ts";
import type { SimModelSpec } from "./models.ts";
import { startOllamaServer, type SimNodeOptions } from "./ollama.ts";
import type { SimServer } from "./server.ts";

export type { Faults } from "./faults.ts";
export type { SimMachine } from "./machine.ts";
export { CATALOG, type Capability, type SimModelSpec } from "./models.ts";
export type { SimMlxOptions } from "./mlx.ts";
export type { MlxLmVersion } from "./mlx-versions.ts";
export type { SimNodeOptions } from "./ollama.ts";

/** What GET /_sim returns. */
export interface SimState {
  id: string;
  kind: "ollama" | "mlx";
  url: string;
  tokensPerSecond: number;
  faults: Faults;
  /** The simulated machine the sim collector reports (memory pressure, thermal, disk, embedding backends). */
  machine: SimMachine;
  /** Requests being answered right now (streams count until their last byte). */
  inFlight: number;
  /** requests, errors, tokens, dropped, hung; Ollama adds loads, evictions, pulls, shows (/api/show answers); both add promptCacheHits, cachedPromptTokens (prompt tokens whose prefill a KV cache saved). */
  counters: Record<string, number>;
  // Ollama nodes
  memoryGb?: number;
  usedGb?: number;
  /** Models on disk. */
  models?: string[];
  /** Resident models, listed least recently used first: not the order they are evicted in (that is keep_alive, then /api/show's blob path). */
  loaded?: string[];
  inFlightByModel?: Record<string, number>;
  // mlx nodes
  model?: string;
  promptCache?: { sequences: number };
}

/** What POST /_sim accepts. `faults` and `machine` replace their whole sets; `models` and `loaded` replace their sets. */
export interface SimPatch {
  faults?: Faults;
  machine?: SimMachine;
  tokensPerSecond?: number;
  models?: string[] | SimModelSpec[];
  loaded?: string[];
}

export interface SimNode {
  id: string;
  url: string;
  port: number;
  kind: "ollama" | "mlx";
  /** Closes the server and drops every open connection, hung ones included. */
  stop(): Promise<void>;
  /** Replaces the fault set (as POST /_sim {"faults": …}). */
  setFaults(faults: Faults): void;
  state(): SimState;
  patch(patch: SimPatch): SimState;
}

export async function startSimOllama(opts: SimNodeOptions): Promise<SimNode> {
  return node(opts.id, "ollama", startOllamaServer(opts));
}

export async function startSimMlx(opts: SimMlxOptions): Promise<SimNode> {
  return node(opts.id, "mlx", startMlxServer(opts));
}

function node(id: string, kind: SimNode["kind"], server: SimServer): SimNode {
  return {
    id,
    kind,
    url: server.url,
    port: server.port,
    stop: server.stop,
    setFaults: server.setFaults,
    state: () => server.state() as unknown as SimState,
    patch: (p) => server.patch(p as Record<string, unknown>) as unknown as SimState,
  };
}

/** A Mac of the demo fleet: its simulated Ollama, and the chip its agent reports (herd knows each chip's bandwidth). */
export type DemoNode = SimNodeOptions & { chip: string };

// Plausible Macs, biggest first; a fleet of n cycles through them.
const DEMO_NODES: readonly Omit<DemoNode, "id">[] = [
  {
    chip: "Apple M2 Ultra",
    memoryGb: 192,
    tokensPerSecond: 600,
    models: ["gpt-oss:120b", "llama3.3:70b", "qwen2.5-coder:32b", "qwen3:32b", "gpt-oss:20b", "qwen3:8b", "llama3.2:3b", "nomic-embed-text"],
    loaded: ["gpt-oss:120b", "qwen2.5-coder:32b", "nomic-embed-text"],
  },
  {
    chip: "Apple M4 Pro",
    memoryGb: 32,
    tokensPerSecond: 400,
    models: ["gpt-oss:20b", "qwen3:8b", "qwen2.5-coder:7b", "llama3.2:3b", "nomic-embed-text"],
    loaded: ["qwen3:8b"],
  },
  {
    chip: "Apple M3",
    memoryGb: 16,
    tokensPerSecond: 250,
    models: ["qwen2.5-coder:7b", "gemma3:4b", "llama3.2:3b", "nomic-embed-text"],
    loaded: ["llama3.2:3b"],
  },
  {
    chip: "Apple M3 Max",
    memoryGb: 64,
    tokensPerSecond: 500,
    models: ["qwen3:30b", "gpt-oss:20b", "llama3.1:8b", "qwen2.5-coder:7b", "llama3.2:3b", "nomic-embed-text"],
    loaded: ["gpt-oss:20b", "nomic-embed-text"],
  },
  {
    chip: "Apple M2",
    memoryGb: 24,
    tokensPerSecond: 350,
    models: ["gemma3:12b", "qwen3:8b", "llama3.2:3b", "llama3.2:1b", "mxbai-embed-large"],
    loaded: [],
  },
];
const DEMO_IDS = ["sim-studio", "sim-mini", "sim-air", "sim-pro", "sim-mini-m2"];

/** n varied, realistic Ollama nodes (ports left to the caller). */
export function demoFleet(n: number): DemoNode[] {
  return Array.from({ length: n }, (_, i) => {
    const round = Math.floor(i / DEMO_NODES.length);
    const id = DEMO_IDS[i % DEMO_IDS.length]! + (round > 0 ? `-${round + 1}` : "");
    return { id, ...DEMO_NODES[i % DEMO_NODES.length]!, loadTimeMs: 200 };
  });
}
