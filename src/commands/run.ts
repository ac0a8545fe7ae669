// The long-running commands: the router (with or without a local node agent),
// the node agent alone, and the simulated demo fleet.
import { join } from "node:path";
import { agentToken } from "../config/credentials/keys.ts";
import { withoutCredentials } from "../config/credentials/secrets.ts";
import { LiveConfig } from "../config/live.ts";
import { expandPath, findConfig, type LoadOptions, parseConfig } from "../config/load.ts";
import type { Config, NodeEntry } from "../config/schema.ts";
import type { OllamaSection } from "../fleet/heartbeat.ts";
import { bandwidthForChip } from "../core/chips.ts";
import { UserError } from "../errors.ts";
import { log } from "../log.ts";
import { DEFAULT_OLLAMA, postTo, startAgent } from "../node/agent.ts";
import { type RouterHandle, startRouter } from "../runtime.ts";
import { STORE_FILE } from "../store/db.ts";
import { simCollector } from "../sim/collector.ts";
import { type SimNode, demoFleet, startSimOllama } from "../sim/index.ts";
import { DEFAULT_MLX_LM_VERSION, type MlxLmVersion } from "../sim/mlx-versions.ts";
import { isLoopback } from "../core/loopback.ts";
import { VERSION } from "../version.ts";
import { localNodeId } from "./local-node.ts";
import { selfCommand } from "./self.ts";

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
  const local = opts.localAgent && (await localAgent(live.config.nodes, opts.localAgent));
  announce(router, local?.nodeId ?? null);
  // --ollama wins; without it the agent follows its entry's ollama through reloads.
  const agent = local ? startAgent({ nodeId: local.nodeId, ollamaUrl: opts.localAgent!.ollamaUrl, live, send: async (hb) => void router.rt.registry.heartbeat(hb, null, true) }) : null;
  if (agent && local) {
    const url = local.ollamaUrl;
    const ollama = await agent.beat();
    const shown = withoutCredentials(url);
    log.info(ollama.reachable ? `local Ollama at ${shown}: ${found(ollama)}` : `local Ollama at ${shown} unreachable; run \`herd sim\` or edit herd.config.ts (in a checkout of herd: \`npm start -- sim\`)`);
  }
  await reportPolled(router);
  await stopped;
  await agent?.stop();
  await router.stop();
  live.close();
  return 0;
}

/** An agent's node id and Ollama: one node with the config's entry for the same Ollama (on this Mac), if there is one. */
async function localAgent(nodes: NodeEntry[], agent: { nodeId: string; ollamaUrl?: string }): Promise<{ nodeId: string; ollamaUrl: string }> {
  const ollamaUrl = agent.ollamaUrl ?? nodes.find((n) => n.id === agent.nodeId)?.ollama ?? DEFAULT_OLLAMA;
  const nodeId = await localNodeId(nodes, agent.nodeId, ollamaUrl);
  if (nodeId !== agent.nodeId) log.info(`local agent reports as node "${nodeId}", the config's entry for the Ollama at ${withoutCredentials(ollamaUrl)}`);
  return { nodeId, ollamaUrl };
}

export async function runNode(opts: { configFlag?: string; nodeId: string; dataDir?: string; ollamaUrl?: string; routerUrl: string; token?: string }): Promise<number> {
  const stopped = untilSignal();
  // An agent needs only its own credential: secrets meant for the router need not be readable here.
  const live = await openLive(opts.configFlag, withOverrides({ dataDir: opts.dataDir }), { secrets: "lenient" });
  // The config's entry for this Mac, whatever address names it there, is this agent's node.
  const { nodeId } = await localAgent(live.config.nodes, { nodeId: opts.nodeId, ollamaUrl: opts.ollamaUrl });
  // HERD_NODE_TOKEN / --token-file win; else the config's, read on every beat so a reload rotates it.
  const token = () => opts.token ?? agentToken(live.config, nodeId);
  try {
    token();
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  const agent = startAgent({ nodeId, live, ollamaUrl: opts.ollamaUrl, credential: token, send: postTo(opts.routerUrl, live.config.timeouts.connectMs, token) });
  log.info(`herd ${VERSION} node agent "${nodeId}" reporting to ${withoutCredentials(opts.routerUrl)} every ${live.config.heartbeat.intervalMs} ms`);
  const ollama = await agent.beat();
  log.info(ollama.reachable ? `local Ollama: ${found(ollama)}` : `local Ollama unreachable (${ollama.error}); pass --ollama URL or set this node's ollama in the config`);
  await stopped;
  await agent.stop();
  live.close();
  return 0;
}

export async function runSim(opts: { configFlag?: string; overrides: Overrides; nodes: number; basePort: number; ollamaVersion: string; withRouter: boolean; mlx: MlxLmVersion | null }): Promise<number> {
  if (opts.mlx && !opts.withRouter) throw new UserError("--mlx needs the router (its node agent runs the MLX server); drop --no-router");
  const stopped = untilSignal();
  const sims: SimNode[] = [];
  const fleet = demoFleet(opts.nodes);
  try {
    for (const [i, { chip: _, ...spec }] of fleet.entries()) sims.push(await startSimOllama({ ...spec, ollamaVersion: opts.ollamaVersion, port: opts.basePort && opts.basePort + i }));
  } catch (e) {
    await Promise.all(sims.map((s) => s.stop()));
    throw new UserError(`cannot start simulated node on port ${opts.basePort + sims.length} (${(e as Error).message}); pass --base-port P`);
  }
  for (const s of sims) log.info(`simulated node ${s.id}: ${s.url}`);
  let router: RouterHandle | null = null;
  let live: LiveConfig | null = null;
  let agents: ReturnType<typeof startAgent>[] = [];
  if (opts.withRouter) {
    // --mlx: the first node runs an MLX server too; herd itself plays mlx_lm.server, as the release asked for.
    const release = opts.mlx === DEFAULT_MLX_LM_VERSION ? [] : ["--mlx-lm-version", opts.mlx!];
    const mlx = opts.mlx ? { mlx: [{ model: SIM_MLX_MODEL, port: opts.basePort ? opts.basePort + sims.length : await freePort() }], mlxCommand: [...selfCommand(), "sim-mlx-server", ...release] } : {};
    // The demo fleet replaces the config's nodes; everything else in the config still applies and reloads.
    const simNodes = parseConfig({ nodes: sims.map((s, i) => ({ id: s.id, ollama: s.url, ...(i === 0 ? mlx : {}) })) }).nodes;
    // Demo traffic must not land in the real store: its own data dir unless one is given.
    const overrides = withOverrides(opts.overrides, SIM_DATA_DIR);
    const config = (live = await openLive(opts.configFlag, (c) => ({ ...overrides(c), nodes: simNodes })));
    const running = (router = await startRouter(config));
    announce(router, null);
    // Each node is reported by the real agent over its simulated machine, as a Mac running `herd node` is: its memory,
    // CPU, disk and thermal state reach the overview, the health checks and the recommendations. Its agent runs the MLX server.
    agents = sims.map((s, i) => {
      const collector = simCollector(s, { chip: fleet[i]!.chip, memoryBandwidthGbps: bandwidthForChip(fleet[i]!.chip) });
      return startAgent({ nodeId: s.id, live: config, ollamaUrl: s.url, collector, send: async (hb) => void running.rt.registry.heartbeat(hb, null, true) });
    });
    for (const [i, agent] of agents.entries()) log.info(`node ${sims[i]!.id}: Ollama at ${sims[i]!.url}: ${found(await agent.beat())}`);
    log.info(`try: curl ${router.url}/api/chat -d '{"model":"llama3.2:3b","messages":[{"role":"user","content":"hello"}]}'`);
    if (opts.mlx) log.info(`MLX: curl ${router.url}/api/chat -d '{"model":"mlx:${SIM_MLX_MODEL}","messages":[{"role":"user","content":"hello"}]}'`);
  }
  await stopped;
  await Promise.all(agents.map((a) => a.stop()));
  await router?.stop();
  live?.close();
  await Promise.all(sims.map((s) => s.stop()));
  return 0;
}

/** Where `herd sim` keeps its store when not told: beside the real one, not in it. */
const SIM_DATA_DIR = "sim";

const SIM_MLX_MODEL = "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit";

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

async function openLive(configFlag: string | undefined, transform: (c: Config) => Config, options: LoadOptions = {}): Promise<LiveConfig> {
  const path = findConfig(configFlag);
  if (!path) log.info(`no herd.config.* in ${process.cwd()}; running on defaults (\`herd init\` writes one)`);
  const live = await LiveConfig.open(path, transform, options);
  live.watch();
  return live;
}

/** The command line's overrides; `subdir`: the data dir's, when none is given, is under the config's. */
function withOverrides(o: Overrides, subdir?: string): (c: Config) => Config {
  return (c) => ({
    ...c,
    server: {
      ...c.server,
      host: o.host ?? c.server.host,
      port: o.port ?? c.server.port,
      // "~" from the defaults (no config file) or HERD_DATA_DIR is $HOME, never a folder named "~" in the cwd.
      dataDir: expandPath(o.dataDir ?? (subdir ? join(c.server.dataDir, subdir) : c.server.dataDir)),
    },
  });
}

/** `localId`: the node this process's own agent reports (it needs no address to reach the router). */
function announce(router: RouterHandle, localId: string | null): void {
  const { source, config } = router.rt.live.current;
  log.info(`herd ${VERSION} serving on ${router.url} (listening on ${config.server.host}:${router.port})`);
  if (isLoopback(config.server.host)) {
    log.info(`listening on this machine only: to serve other Macs and their agents, set server.host: "0.0.0.0" (or --host 0.0.0.0), which opens herd to everyone on the network until auth is set (docs/security.md)`);
    // An entry with no ollama address is one whose agent must reach this router to be seen at all.
    const agents = config.nodes.filter((n) => !n.ollama && n.id !== localId).map((n) => n.id);
    if (agents.length) log.warn(`node(s) ${agents.join(", ")} report by their agent's heartbeat, which cannot reach a router listening on ${config.server.host}: set server.host`);
  }
  log.info(`config: ${source.path ?? "defaults"} (hash ${source.hash}); ${config.nodes.length} node(s) declared; reloads on save`);
  log.info(`store: ${join(config.server.dataDir, STORE_FILE)}`);
}

async function reportPolled(router: RouterHandle): Promise<void> {
  await router.firstPoll;
  const { registry } = router.rt;
  for (const t of registry.pollTargets()) {
    const ollama = registry.get(t.id)?.ollama;
    if (!ollama) continue;
    const url = withoutCredentials(t.url);
    if (ollama.reachable) log.info(`node ${t.id}: Ollama at ${url}: ${found(ollama)}`);
    else log.warn(`node ${t.id}: Ollama at ${url} unreachable (${ollama.error}); check the node or edit herd.config.ts`);
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
