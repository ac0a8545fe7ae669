// Three unlike Macs for the routing comparison, simulated: each an Ollama sim
// that generates as fast as its memory bandwidth allows for the model's size,
// loads for longer the bigger the model, and runs OLLAMA_NUM_PARALLEL requests
// per model at once. Each has a real node agent (src/node/agent.ts) reporting
// it to the router by heartbeat, so herd learns memory and bandwidth the way it
// does in production.
import { LiveConfig } from "../../src/config/live.ts";
import type { Config } from "../../src/config/schema.ts";
import { postTo, startAgent } from "../../src/node/agent.ts";
import { simCollector } from "../../src/sim/collector.ts";
import { type SimNode, startSimOllama } from "../../src/sim/index.ts";

export interface Mac {
  id: string;
  chip: string;
  memoryGb: number;
  bandwidthGbps: number;
  /** How fast it reads a model file into memory. */
  diskGbps: number;
  /** OLLAMA_NUM_PARALLEL as Ollama would pick it: fewer slots where memory is tight. */
  numParallel: number;
  models: string[];
  loaded: string[];
}

// What an operator would have pulled: every model that fits. Runner start-up (1 s) plus the file read makes a load.
const RUNNER_START_MS = 1000;
export const MACS: readonly Mac[] = [
  {
    id: "studio",
    chip: "Apple M2 Ultra",
    memoryGb: 192,
    bandwidthGbps: 800,
    diskGbps: 5,
    numParallel: 4,
    models: ["qwen2.5-coder:32b", "mistral:7b", "llama3.2:3b", "nomic-embed-text", "qwen3:8b", "gemma3:12b", "llama3.1:8b"],
    loaded: ["qwen2.5-coder:32b", "llama3.2:3b", "nomic-embed-text"],
  },
  {
    id: "mini",
    chip: "Apple M4 Pro",
    memoryGb: 32,
    bandwidthGbps: 273,
    diskGbps: 4,
    numParallel: 2,
    models: ["qwen2.5-coder:32b", "mistral:7b", "llama3.2:3b", "nomic-embed-text", "qwen3:8b", "gemma3:12b", "llama3.1:8b"],
    loaded: ["mistral:7b", "llama3.2:3b"],
  },
  {
    id: "air",
    chip: "Apple M2",
    memoryGb: 16,
    bandwidthGbps: 100,
    diskGbps: 2,
    numParallel: 1,
    models: ["mistral:7b", "llama3.2:3b", "nomic-embed-text", "qwen3:8b", "llama3.1:8b"],
    loaded: ["llama3.2:3b", "nomic-embed-text"],
  },
];

/** The router's view of the fleet: each node's parallel slots (its address comes by heartbeat). */
export const fleetNodes = MACS.map((m) => ({ id: m.id, parallel: m.numParallel }));
/** The agents' credential (the router's auth.nodeToken): only a proven heartbeat may say where the node's Ollama is. */
export const FLEET_NODE_TOKEN = "bench-node-token";

export interface Fleet {
  sims: SimNode[];
  stop(): Promise<void>;
}

/** Starts the sims, then their agents, each sending its first heartbeat before this returns. */
export async function startFleet(routerUrl: string, routerConfig: Config): Promise<Fleet> {
  const sims = await Promise.all(
    MACS.map((m) =>
      startSimOllama({
        id: m.id,
        memoryGb: m.memoryGb,
        memoryBandwidthGbps: m.bandwidthGbps,
        loadTimeMs: RUNNER_START_MS,
        diskGbps: m.diskGbps,
        numParallel: m.numParallel,
        models: m.models,
        loaded: m.loaded,
      }),
    ),
  );
  const live = await LiveConfig.open(null, () => routerConfig);
  const agents = MACS.map((m, i) =>
    startAgent({
      nodeId: m.id,
      live,
      ollamaUrl: sims[i]!.url,
      send: postTo(routerUrl, routerConfig.timeouts.connectMs, () => FLEET_NODE_TOKEN),
      collector: simCollector(sims[i]!, { chip: m.chip, memoryBandwidthGbps: m.bandwidthGbps }),
    }),
  );
  await Promise.all(agents.map((a) => a.beat()));
  return {
    sims,
    async stop() {
      for (const a of agents) a.stop();
      live.close();
      await Promise.all(sims.map((s) => s.stop()));
    },
  };
}
