// The app's sources for tests (not a test file itself): the router's own parts,
// idle — an empty fleet of the config's nodes, an in-memory store, nothing
// started, no socket — and a trace writer that keeps nothing. A test builds the
// whole app (or any one surface) over them, or swaps in a fake of its own.
import { Database } from "bun:sqlite";
import { AgentFleet } from "./agents/fleet.ts";
import type { AppSources } from "./app.ts";
import { LiveConfig } from "./config/live.ts";
import { parseConfig } from "./config/load.ts";
import { nodeAnswerCap } from "./config/schema.ts";
import { BenchmarkRunner } from "./fleet/benchmark.ts";
import { ModelFacts } from "./fleet/model-facts.ts";
import { NodeOrdering } from "./fleet/ordering.ts";
import { Pins } from "./fleet/pins.ts";
import { Platform } from "./platform/connection.ts";
import { Warmer } from "./fleet/preloader.ts";
import { Pulls } from "./fleet/pulls.ts";
import { Queues } from "./fleet/queues.ts";
import { Registry } from "./fleet/registry.ts";
import { RepairStats } from "./fleet/repair-stats.ts";
import { SessionAffinity } from "./fleet/affinity.ts";
import { PromptCounts } from "./fleet/prompt-counts.ts";
import { ExploreTurns } from "./fleet/explore-turns.ts";
import { Speeds } from "./fleet/speeds.ts";
import { ClientGate } from "./router/client-gate.ts";
import { Toggles } from "./router/toggles.ts";
import { AfterAnswer } from "./pipeline/after-answer.ts";
import { summariseOnFleet } from "./pipeline/summarise.ts";
import { WorkerRoster } from "./store/agent-workers.ts";
import { migrate } from "./store/db.ts";
import { ExportHealth } from "./core/export-health.ts";

/** `raw`: the config as written in herd.config.ts; the defaults (open mode, no nodes) when empty. */
export async function idleSources(raw: Record<string, unknown> = {}): Promise<AppSources> {
  const live = await LiveConfig.open(null, () => parseConfig(raw));
  const store = new Database(":memory:");
  migrate(store);
  const registry = new Registry(live.config, store);
  const queues = new Queues();
  const sources: AppSources = {
    live,
    registry,
    store,
    traces: { record: () => {}, tally: () => {}, outcomes: new Map(), health: () => ({ file: ":memory:", written: 0, pruned: 0, lost: 0, lastWriteAt: null, lastError: null }) },
    queues,
    ordering: new NodeOrdering(),
    clients: new ClientGate(),
    pulls: new Pulls(),
    pins: new Pins(store, live, registry),
    warmer: new Warmer(async () => 0),
    toolRepairs: new RepairStats(),
    afterAnswer: new AfterAnswer(),
    speeds: new Speeds((id) => registry.bandwidthGbps(id)),
    exploreTurns: new ExploreTurns(),
    promptCounts: new PromptCounts(),
    affinity: new SessionAffinity(),
    modelFacts: new ModelFacts(registry, () => nodeAnswerCap(live.config)),
    summarise: (ask, signal) => summariseOnFleet(sources, ask, signal),
    toggles: new Toggles(),
    benchmarks: new BenchmarkRunner({ registry, queues, store, baseUrl: () => "", credentials: () => ({}), readLines: async function* () {}, maxAnswer: () => nodeAnswerCap(live.config) }),
    agents: new AgentFleet(live, () => "", new WorkerRoster(store)),
    // Reads the config's data dir only when asked; an idle app is never connected to it.
    platform: new Platform(live.config.server.dataDir, store),
    telemetry: { check: async () => {}, lastError: null },
    exports: new ExportHealth(),
    shutdown: new AbortController(),
    startedAt: Date.now(),
    ready: true,
  };
  return sources;
}
