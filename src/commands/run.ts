// The long-running commands: the router (with or without a local node agent),
// the node agent alone, and the simulated demo fleet.
import { join } from "node:path";
import { LiveConfig } from "../config/live.ts";
import { findConfig, parseConfig } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import type { OllamaSection } from "../fleet/heartbeat.ts";
import { UserError } from "../errors.ts";
import { log } from "../log.ts";
import { DEFAULT_OLLAMA, postTo, startAgent } from "../node/agent.ts";
import { type RouterHandle, startRouter } from "../runtime.ts";
import { STORE_FILE } from "../store/db.ts";
import { type SimNode, demoFleet, startSimOllama } from "../sim/index.ts";
import { VERSION } from "../version.ts";

export interface Overrides {
  port?: number;
  host?: string;
  dataDir?: string;
}

export async function runRouter(opts: {
  configFlag?: string;
  overrides: Overrides;
  localAgent: { nodeId: string; ollamaUrl?: string } | null;
}): Promise<number> {
  const stopped = untilSignal();
  const live = await openLive(opts.configFlag, withOverrides(opts.overrides));
  const router = await startRouter(live);
  announce(router);
  const agent = opts.localAgent
    ? startAgent({ ...opts.localAgent, live, send: async (hb) => void router.rt.registry.heartbeat(hb, null) })
    : null;
  if (agent && opts.localAgent) {
    const url = opts.localAgent.ollamaUrl ?? live.config.nodes.find((n) => n.id === opts.localAgent!.nodeId)?.ollama ?? DEFAULT_OLLAMA;
    const ollama = await agent.beat();
    log.info(ollama.reachable ? `local Ollama at ${url}: ${found(ollama)}` : `local Ollama at ${url} unreachable; run \`herd sim\` or edit herd.config.ts`);
  }
  await reportPolled(router);
  await stopped;
  agent?.stop();
  await router.stop();
  live.close();
  return 0;
}

export async function runNode(opts: { configFlag?: string; nodeId: string; ollamaUrl?: string; routerUrl: string }): Promise<number> {
  const stopped = untilSignal();
  const live = await openLive(opts.configFlag, (c) => c);
  const agent = startAgent({ nodeId: opts.nodeId, live, ollamaUrl: opts.ollamaUrl, send: postTo(opts.routerUrl, live.config.timeouts.connectMs) });
  log.info(`herd ${VERSION} node agent "${opts.nodeId}" reporting to ${opts.routerUrl} every ${live.config.heartbeat.intervalMs} ms`);
  const ollama = await agent.beat();
  log.info(ollama.reachable ? `local Ollama: ${found(ollama)}` : `local Ollama unreachable (${ollama.error}); pass --ollama URL or set this node's ollama in the config`);
  await stopped;
  agent.stop();
  live.close();
  return 0;
}

export async function runSim(opts: { configFlag?: string; overrides: Overrides; nodes: number; basePort: number; withRouter: boolean }): Promise<number> {
  const stopped = untilSignal();
  const sims: SimNode[] = [];
  try {
    for (const [i, spec] of demoFleet(opts.nodes).entries()) sims.push(await startSimOllama({ ...spec, port: opts.basePort && opts.basePort + i }));
  } catch (e) {
    await Promise.all(sims.map((s) => s.stop()));
    throw new UserError(`cannot start simulated node on port ${opts.basePort + sims.length} (${(e as Error).message}); pass --base-port P`);
  }
  for (const s of sims) log.info(`simulated node ${s.id}: ${s.url}`);
  let router: RouterHandle | null = null;
  let live: LiveConfig | null = null;
  if (opts.withRouter) {
    // The demo fleet replaces the config's nodes; everything else in the config still applies and reloads.
    const simNodes = parseConfig({ nodes: sims.map((s) => ({ id: s.id, ollama: s.url })) }).nodes;
    const overrides = withOverrides(opts.overrides);
    live = await openLive(opts.configFlag, (c) => ({ ...overrides(c), nodes: simNodes }));
    router = await startRouter(live);
    announce(router);
    await reportPolled(router);
    log.info(`try: curl ${router.url}/api/chat -d '{"model":"llama3.2:3b","messages":[{"role":"user","content":"hello"}]}'`);
  }
  await stopped;
  await router?.stop();
  live?.close();
  await Promise.all(sims.map((s) => s.stop()));
  return 0;
}

async function openLive(configFlag: string | undefined, transform: (c: Config) => Config): Promise<LiveConfig> {
  const path = findConfig(configFlag);
  if (!path) log.info(`no herd.config.* in ${process.cwd()}; running on defaults (\`herd init\` writes one)`);
  const live = await LiveConfig.open(path, transform);
  live.watch();
  return live;
}

function withOverrides(o: Overrides): (c: Config) => Config {
  return (c) => ({
    ...c,
    server: {
      host: o.host ?? c.server.host,
      port: o.port ?? c.server.port,
      dataDir: o.dataDir ?? c.server.dataDir,
    },
  });
}

function announce(router: RouterHandle): void {
  const { source, config } = router.rt.live.current;
  log.info(`herd ${VERSION} serving on ${router.url} (listening on ${config.server.host}:${router.port})`);
  log.info(`config: ${source.path ?? "defaults"} (hash ${source.hash}); ${config.nodes.length} node(s) declared; reloads on save`);
  log.info(`store: ${join(config.server.dataDir, STORE_FILE)}`);
}

async function reportPolled(router: RouterHandle): Promise<void> {
  await router.firstPoll;
  const { registry } = router.rt;
  for (const t of registry.pollTargets()) {
    const ollama = registry.get(t.id)?.ollama;
    if (!ollama) continue;
    if (ollama.reachable) log.info(`node ${t.id}: Ollama at ${t.url}: ${found(ollama)}`);
    else log.warn(`node ${t.id}: Ollama at ${t.url} unreachable (${ollama.error}); check the node or edit herd.config.ts`);
  }
}

function found(ollama: OllamaSection): string {
  const loaded = ollama.models_loaded.map((m) => m.name);
  return `${ollama.models_available.length} model(s) on disk, ${loaded.length} loaded${loaded.length ? ` (${loaded.join(", ")})` : ""}`;
}

// Installed before anything starts, so a signal during start-up still ends in a clean stop.
function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const done = (signal: string) => {
      log.info(`${signal}: stopping`);
      resolve();
    };
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
  });
}
