// Unlike Macs for the routing comparison, simulated: each an Ollama sim of the newest release herd follows, with its
// defaults (OLLAMA_NUM_PARALLEL and OLLAMA_CONTEXT_LENGTH unset: one request per model at a time, the context picked
// by the Mac's memory), that generates as fast as its memory bandwidth allows for the model's size, loads for longer
// the bigger the model (and its KV cache), and keeps each slot's last prompt in its KV cache. Two fleets: one
// whose nodes have a real node agent (src/node/agent.ts) reporting them by
// heartbeat, so herd learns memory and bandwidth the way it does in production,
// and a held-out one of other Macs named only by their Ollama URLs, of which
// herd knows nothing but what Ollama answers.
import { randomUUID } from "node:crypto";
import { agentToken } from "../../src/config/credentials/keys.ts";
import { LiveConfig } from "../../src/config/live.ts";
import type { Config } from "../../src/config/schema.ts";
import type { NodeConfig } from "../../src/config/types.ts";
import { postTo, startAgent } from "../../src/node/agent.ts";
import { simCollector } from "../../src/sim/collector.ts";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../../src/sim/index.ts";
import { AGENT_MODEL } from "./workload.ts";

export interface Mac {
  id: string;
  chip: string;
  memoryGb: number;
  bandwidthGbps: number;
  /** How fast it reads a model file into memory. */
  diskGbps: number;
  models: string[];
  loaded: string[];
  /** Named in the config by its Ollama URL only, no node agent: herd knows of it only what Ollama answers. */
  agentless?: boolean;
}

export interface BenchFleet {
  /** "agents", "agentless", "sessions", or a fleet drawn from a seed (random-fleet.ts). */
  name: string;
  macs: readonly Mac[];
}

// What an operator would have pulled: every model the workload asks for that fits. Runner start-up (1 s) plus the file
// read makes a load.
const RUNNER_START_MS = 1000;
const EVERY_MODEL = ["qwen2.5-coder:32b", "qwen2.5-coder:7b", "mistral:7b", "llama3.2:3b", "llama3.1:8b", "nomic-embed-text", "qwen3:8b", "gemma3:12b", "gpt-oss:20b"];
const BUT_THE_32B = EVERY_MODEL.filter((m) => m !== "qwen2.5-coder:32b");
// The agents' coding model resident on the two larger Macs, as a team running coding agents keeps it: each turn has two
// nodes to go to, so whether it goes back to the one holding its prompt is the router's choice (affinity's test).

export const AGENT_FLEET: BenchFleet = {
  name: "agents",
  macs: [
    { id: "studio", chip: "Apple M2 Ultra", memoryGb: 192, bandwidthGbps: 800, diskGbps: 5, models: EVERY_MODEL, loaded: ["qwen2.5-coder:32b", "llama3.2:3b", "nomic-embed-text", AGENT_MODEL] },
    { id: "mini", chip: "Apple M4 Pro", memoryGb: 32, bandwidthGbps: 273, diskGbps: 4, models: EVERY_MODEL, loaded: ["mistral:7b", "llama3.2:3b", AGENT_MODEL] },
    { id: "air", chip: "Apple M2", memoryGb: 16, bandwidthGbps: 100, diskGbps: 2, models: BUT_THE_32B, loaded: ["llama3.2:3b", "nomic-embed-text"] },
  ],
};

export const AGENTLESS_FLEET: BenchFleet = {
  name: "agentless",
  macs: [
    { id: "ultra", chip: "Apple M3 Ultra", memoryGb: 192, bandwidthGbps: 819, diskGbps: 6, models: EVERY_MODEL, loaded: ["qwen2.5-coder:32b", "nomic-embed-text", AGENT_MODEL], agentless: true },
    { id: "max", chip: "Apple M1 Max", memoryGb: 64, bandwidthGbps: 400, diskGbps: 5, models: EVERY_MODEL, loaded: ["llama3.2:3b", "mistral:7b", AGENT_MODEL], agentless: true },
    { id: "m1", chip: "Apple M1", memoryGb: 16, bandwidthGbps: 68, diskGbps: 2, models: BUT_THE_32B, loaded: ["llama3.2:3b", "nomic-embed-text"], agentless: true },
  ],
};

export const FLEETS = [AGENT_FLEET, AGENTLESS_FLEET] as const;

// The competing sessions' fleet: three alike Macs with agents, the coding model resident on each, so every turn has a
// real choice of node, and the node holding its prompt is no faster than the others but for its cache.
const alike = (id: string): Mac => ({ id, chip: "Apple M1 Max", memoryGb: 64, bandwidthGbps: 400, diskGbps: 5, models: [AGENT_MODEL], loaded: [AGENT_MODEL] });
export const SESSION_FLEET: BenchFleet = { name: "sessions", macs: [alike("max-1"), alike("max-2"), alike("max-3")] };

export interface Fleet {
  sims: SimNode[];
  /**
   * The router's view of the fleet: with agents each node's credential (a heartbeat without one proves nothing, so herd
   * would not take the Ollama address it reports); agentless its Ollama URL only. Neither declares the node's slots.
   */
  nodes: NodeConfig[];
  /** Starts the agents (agentless: nothing), each sending its first heartbeat before this returns. */
  report(routerUrl: string, routerConfig: Config): Promise<void>;
  stop(): Promise<void>;
}

/** A Mac's sim options, every field that sets its speed given. */
export type MacSim = SimNodeOptions & Required<Pick<SimNodeOptions, "memoryGb" | "memoryBandwidthGbps" | "loadTimeMs" | "diskGbps">> & { models: string[]; loaded: string[] };

/** The sim that plays this Mac. */
export function simOptions(m: Mac): MacSim {
  return { id: m.id, memoryGb: m.memoryGb, memoryBandwidthGbps: m.bandwidthGbps, loadTimeMs: RUNNER_START_MS, diskGbps: m.diskGbps, models: m.models, loaded: m.loaded };
}

/** Starts the fleet's sims; their agents start once the router is up (report). */
export async function startFleet(fleet: BenchFleet): Promise<Fleet> {
  const sims = await Promise.all(fleet.macs.map((m) => startSimOllama(simOptions(m))));
  const stops: (() => void)[] = [];
  return {
    sims,
    nodes: fleet.macs.map((m, i) => (m.agentless ? { id: m.id, ollama: sims[i]!.url } : { id: m.id, token: randomUUID() })),
    async report(routerUrl, routerConfig) {
      const withAgents = fleet.macs.flatMap((m, i) => (m.agentless ? [] : [{ m, sim: sims[i]! }]));
      if (!withAgents.length) return;
      const live = await LiveConfig.open(null, () => routerConfig);
      const agents = withAgents.map(({ m, sim }) =>
        startAgent({
          nodeId: m.id,
          live,
          ollamaUrl: sim.url,
          send: postTo(routerUrl, routerConfig.timeouts.connectMs, () => agentToken(routerConfig, m.id)),
          collector: simCollector(sim, { chip: m.chip, memoryBandwidthGbps: m.bandwidthGbps }),
        }),
      );
      stops.push(() => {
        for (const a of agents) a.stop();
        live.close();
      });
      await Promise.all(agents.map((a) => a.beat()));
    },
    async stop() {
      for (const stop of stops) stop();
      await Promise.all(sims.map((s) => s.stop()));
    },
  };
}
