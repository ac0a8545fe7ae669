// The router process: config, store, fleet registry, poller and HTTP server,
// started in order and stopped in reverse.
import type { Database } from "bun:sqlite";
import type { Server } from "bun";
import { join } from "node:path";
import { AgentFleet } from "./agents/fleet.ts";
import { buildApp } from "./app.ts";
import { internalHeaders } from "./config/credentials/internal.ts";
import { lineLimits, readLines } from "./backends/lines.ts";
import { loadModel, probeOllama } from "./backends/ollama.ts";
import { serverBodyCap } from "./auth/limits.ts";
import { keepAliveSeconds } from "./auth/connections.ts";
import type { LiveConfig } from "./config/live.ts";
import { type Config, nodeAnswerCap } from "./config/schema.ts";
import type { OtlpExport } from "./pipeline/otlp.ts";
import { AfterAnswer } from "./pipeline/after-answer.ts";
import { summariseOnFleet } from "./pipeline/summarise.ts";
import type { Summarise } from "./router/compaction.ts";
import { BenchmarkRunner } from "./fleet/benchmark.ts";
import { ModelFacts } from "./fleet/model-facts.ts";
import { startPoller } from "./fleet/poller.ts";
import { startPreloader, Warmer } from "./fleet/preloader.ts";
import { startRebalancer } from "./fleet/rebalancer.ts";
import { NodeOrdering } from "./fleet/ordering.ts";
import { Pins } from "./fleet/pins.ts";
import { Platform } from "./platform/connection.ts";
import { defaultSendAtMs, Telemetry } from "./platform/telemetry.ts";
import { Pulls } from "./fleet/pulls.ts";
import { Queues } from "./fleet/queues.ts";
import { ClientGate } from "./router/client-gate.ts";
import { replicaInputs } from "./router/finish-order.ts";
import { ExportHealth } from "./core/export-health.ts";
import { startIdleShrink } from "./core/idle-shrink.ts";
import { RepairStats } from "./fleet/repair-stats.ts";
import { Toggles } from "./router/toggles.ts";
import { diskBytes, Registry } from "./fleet/registry.ts";
import { SessionAffinity } from "./fleet/affinity.ts";
import { PromptCounts } from "./fleet/prompt-counts.ts";
import { ExploreTurns } from "./fleet/explore-turns.ts";
import { Speeds } from "./fleet/speeds.ts";
import { RouteError, UserError } from "./errors.ts";
import { log } from "./log.ts";
import { STORE_FILE, openStore, recordEvent } from "./store/db.ts";
import { WorkerRoster } from "./store/agent-workers.ts";
import { startSaver } from "./store/saver.ts";
import { writeSlots } from "./store/slots.ts";
import { readSpeeds, writeSpeeds } from "./store/speeds.ts";
import { TraceWriter } from "./store/traces.ts";
import { knownModel } from "./fleet/catalog.ts";
import { within } from "./within.ts";

// The OTLP exporter is an entrypoint of its own in the compiled binary (compile/build.ts), as the trace worker is, so a
// binary without telemetry.otlp never even reads its code; a specifier the bundler cannot follow keeps it out of the main bundle.
const OTLP_EXPORT = import.meta.url.includes("/$bunfs/") ? "./pipeline/otlp.ts" : new URL("./pipeline/otlp.ts", import.meta.url).href;

export interface Runtime {
  live: LiveConfig;
  registry: Registry;
  store: Database;
  traces: TraceWriter;
  queues: Queues;
  ordering: NodeOrdering;
  clients: ClientGate;
  pulls: Pulls;
  pins: Pins;
  /** Loads models on nodes for the pins (the preloader, POST /fleet/pin). */
  warmer: Warmer;
  toolRepairs: RepairStats;
  /** Each answer's bookkeeping (trace row, learned speeds and slots, token counts), done once the answer is out. */
  afterAnswer: AfterAnswer;
  /** How fast each node:model runs, learned from the answers and loads (kept in the store). */
  speeds: Speeds;
  /** Whose turn it is to try a node routing has not learned for a model. */
  exploreTurns: ExploreTurns;
  promptCounts: PromptCounts;
  /** Which node served each session's last turn (routing.sessionAffinity). */
  affinity: SessionAffinity;
  /** What a node's /api/show says of each model: capabilities (thinking, tools, vision, …) and trained context. */
  modelFacts: ModelFacts;
  /** Summaries of conversations' oldest turns, written on the fleet (context fitting's last resort before a 413). */
  summarise: Summarise;
  /** Runtime flips of features.autoPull / vramFallback (POST /dashboard/api/settings). */
  toggles: Toggles;
  benchmarks: BenchmarkRunner;
  /** The agent fleet: coding-agent workers in tmux panes (docs/agents.md). */
  agents: AgentFleet;
  /** The opt-in platform connection (docs/platform.md) and its daily usage roll-up. */
  platform: Platform;
  telemetry: Telemetry;
  /** How the OTLP export (telemetry.otlp) is doing: /metrics and the otlp_export check read it. */
  exports: ExportHealth;
  /**
   * Aborted when a stop's grace period (server.shutdownGraceMs) runs out: answers still streaming end
   * with an error in their own format, requests no node has answered yet get a 503.
   */
  shutdown: AbortController;
  /** Where the router serves, for its own requests (benchmarks); set once it listens. */
  url: string;
  startedAt: number;
  ready: boolean;
}

export interface RouterHandle {
  rt: Runtime;
  url: string;
  port: number;
  /** Resolves after the first poll of every agentless node. */
  firstPoll: Promise<void>;
  stop(): Promise<void>;
}

export async function startRouter(live: LiveConfig): Promise<RouterHandle> {
  const { host, port, dataDir } = live.config.server;
  let store: Database;
  try {
    store = openStore(dataDir);
  } catch (e) {
    throw new UserError(`cannot open the store in ${dataDir} (${(e as Error).message}); pass --data-dir DIR or set server.dataDir`);
  }
  const registry = new Registry(live.config, store);
  const queues = new Queues();
  const speeds = new Speeds((id) => registry.bandwidthGbps(id), readSpeeds(store));
  const platform = new Platform(dataDir, store);
  const rt: Runtime = {
    live,
    registry,
    store,
    traces: new TraceWriter(join(dataDir, STORE_FILE), (model) => knownModel(registry, model), () => live.config.store.traces),
    queues,
    ordering: new NodeOrdering(),
    clients: new ClientGate(),
    pulls: new Pulls(),
    pins: new Pins(store, live, registry),
    warmer: new Warmer(
      (url, model, timeoutMs, keep) => loadModel(url, model, timeoutMs, keep, nodeAnswerCap(live.config)),
      (nodeId, model, loadNs) => speeds.observe(nodeId, model, { loadNs }, diskBytes(registry.get(nodeId), model)),
      (nodeId, model) => queues.loads.begin(nodeId, { model, loadMs: speeds.predict(nodeId, model, diskBytes(registry.get(nodeId), model), Date.now()).loadMs }),
    ),
    toolRepairs: new RepairStats(),
    afterAnswer: new AfterAnswer(),
    speeds,
    exploreTurns: new ExploreTurns(),
    promptCounts: new PromptCounts(),
    affinity: new SessionAffinity(),
    modelFacts: new ModelFacts(registry, () => nodeAnswerCap(live.config)),
    summarise: (ask, signal) => summariseOnFleet(rt, ask, signal),
    toggles: new Toggles(),
    benchmarks: new BenchmarkRunner({ registry, queues, store, baseUrl: () => rt.url, credentials: internalHeaders, readLines: (body, idleMs) => readLines(body.getReader(), { ...lineLimits(live.config), idleMs }), maxAnswer: () => nodeAnswerCap(live.config) }),
    agents: new AgentFleet(live, () => rt.url, new WorkerRoster(store)),
    platform,
    telemetry: new Telemetry({ platform, live, store, dataDir, sendAtMs: telemetrySendAt() }),
    exports: new ExportHealth(),
    shutdown: new AbortController(),
    url: "",
    startedAt: Date.now(),
    ready: false,
  };
  recordConfig(rt);

  const app = buildApp(rt);
  try {
    // reusePort off: a second herd on the same port must fail loudly, not share the socket.
    // Bun's own body cap is server-wide; the guard holds each route to its own, smaller limit.
    // Idle between requests: closed after server.keepAliveMs; a request herd answers is held to its own timeouts (auth/connections.ts).
    app.listen({ hostname: host, port, idleTimeout: keepAliveSeconds(live.config), reusePort: false, development: false, maxRequestBodySize: serverBodyCap(live.config.server) });
  } catch (e) {
    store.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new UserError(`port ${port} on ${host} is already in use (another herd, or Ollama?); pass --port N or set server.port`);
    if (code === "EADDRNOTAVAIL") throw new UserError(`cannot listen on ${host}: no such address on this machine; fix server.host`);
    throw new UserError(`cannot listen on ${host}:${port}: ${(e as Error).message}`);
  }
  const server = app.server!;
  const boundPort = server.port!;
  rt.url = `http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${boundPort}`;
  const otlp = await followOtlp(rt);
  const poller = startPoller(rt.registry, live, probeOllama);
  const preloader = startPreloader(rt);
  const rebalancer = startRebalancer(rt.registry, rt.queues, () => live.config, {
    inputs: (model, promptTokens) => replicaInputs({ ...rt, config: live.config }, model, promptTokens),
    warmer: rt.warmer,
  });
  const learnedSaver = startSaver(() => {
    writeSpeeds(store, speeds.takeChanged());
    writeSlots(store, rt.registry.learnedSlots.takeChanged());
  });
  const idleShrink = startIdleShrink(() => live.config.server.idleShrinkMs);
  const factsOfLoaded = setInterval(() => rt.modelFacts.askLoaded(), FACTS_OF_LOADED_MS);
  await rt.agents.start(boundPort);
  rt.telemetry.start();
  rt.ready = true;

  return {
    rt,
    port: boundPort,
    url: rt.url,
    firstPoll: poller.pollNow(),
    async stop() {
      rt.ready = false;
      poller.stop();
      preloader.stop();
      idleShrink.stop();
      clearInterval(factsOfLoaded);
      rebalancer.stop();
      await rt.benchmarks.cancel(); // before the store closes under it
      await rt.telemetry.stop(); // a roll-up being read or sent, too
      await rt.agents.close(); // ends the workers and their panes; a send still waiting answers "failed"
      await drain(app, server, rt);
      rt.afterAnswer.flush(); // the last answers' rows and lessons, before the writer and the store close
      await rt.traces.close();
      await otlp.stop(); // after the traces: their last rows' spans go out too
      learnedSaver.stop(); // saves what the last answers taught
      store.close();
    },
  };
}

/** How often herd asks after the models the nodes have loaded that it has not asked about (fleet/model-facts.ts askLoaded). */
export const FACTS_OF_LOADED_MS = 1000;

/**
 * When yesterday's usage roll-up is sent, in ms after 00:00 UTC: 00:05 plus a jitter, or HERD_TELEMETRY_SEND_AT_MS
 * (tests set 0: a router started any time of day sends yesterday's at once, if not sent yet).
 */
function telemetrySendAt(): number {
  const set = process.env.HERD_TELEMETRY_SEND_AT_MS;
  return set && Number.isFinite(Number(set)) ? Number(set) : defaultSendAtMs();
}

/**
 * telemetry.otlp's export, following the config: started, replaced or stopped when a reload changes it. The exporter
 * is imported only once configured: without telemetry.otlp no OpenTelemetry code is ever loaded.
 */
async function followOtlp(rt: Runtime): Promise<{ stop(): Promise<void> }> {
  const start = async (config: Config["telemetry"]["otlp"]): Promise<OtlpExport | null> => {
    if (!config) return null;
    try {
      return ((await import(OTLP_EXPORT)) as typeof import("./pipeline/otlp.ts")).startOtlp(config, rt);
    } catch (e) {
      log.error(`cannot start the OTLP export (telemetry.otlp): ${(e as Error).message}`);
      return null;
    }
  };
  // Its header values resolved: a secret's new value is a change too, though the config prints it masked.
  const shape = (config: Config) => {
    const otlp = config.telemetry.otlp;
    return JSON.stringify(otlp && { ...otlp, headers: Object.entries(otlp.headers).map(([name, secret]) => [name, secret.value]) });
  };
  let running = start(rt.live.config.telemetry.otlp);
  await running; // before the router is ready: the first request's spans go out too
  const unsubscribe = rt.live.onChange((next, previous) => {
    if (shape(next.config) === shape(previous.config)) return;
    // One after the other: the old export sends what it holds before the new one starts.
    running = running.then((old) => old?.stop()).then(() => start(next.config.telemetry.otlp));
  });
  return {
    async stop() {
      unsubscribe();
      await (await running)?.stop();
    },
  };
}

/** How long answers cut at the end of the grace period get to send their error before the last connections close. */
const CUT_FLUSH_MS = 1000;

// Stops listening (a new connection is refused), lets the answers in flight finish within
// server.shutdownGraceMs, then cuts the rest with an error and closes whatever is left.
async function drain(app: ReturnType<typeof buildApp>, server: Server<unknown>, rt: Runtime): Promise<void> {
  const graceMs = rt.live.config.server.shutdownGraceMs;
  const waiting = rt.queues.entries().reduce((n, q) => n + q.in_flight + q.pending, 0);
  if (waiting) log.info(`letting ${waiting} request(s) in flight finish, for up to ${graceMs} ms (server.shutdownGraceMs)`);
  const closed = app.stop(); // resolves once every connection has closed
  if (await settlesWithin(closed, graceMs)) return;
  const message = `herd is shutting down and this request did not finish within server.shutdownGraceMs (${graceMs} ms); retry it`;
  rt.shutdown.abort(new RouteError(503, message, 0, [], 1));
  if (await settlesWithin(closed, CUT_FLUSH_MS)) return;
  await server.stop(true);
}

function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return within(work.then(() => true), ms, () => false);
}

// The fleet follows the config; settings that need a new socket say so instead of silently not applying.
function recordConfig(rt: Runtime): void {
  const insert = (ok: boolean, hash: string | null, message: string | null) =>
    recordEvent(rt.store, "INSERT INTO config_events (at, path, hash, ok, message) VALUES (?, ?, ?, ?, ?)", [
      Date.now() / 1000,
      rt.live.current.source.path,
      hash,
      ok ? 1 : 0,
      message,
    ]);
  insert(true, rt.live.current.source.hash, null);
  rt.live.onChange((next, previous) => {
    rt.registry.sync(next.config);
    insert(true, next.source.hash, null);
    const [a, b] = [previous.config.server, next.config.server];
    if (a.host !== b.host || a.port !== b.port) log.warn(`server.host/port changed to ${b.host}:${b.port}; restart herd to listen there`);
    if (a.dataDir !== b.dataDir) log.warn(`server.dataDir changed to ${b.dataDir}; restart herd to use it`);
  });
  rt.live.onError((error) => insert(false, error.hash, error.message));
}
