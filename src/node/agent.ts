// The node agent: every heartbeat interval it reads the machine and its local
// Ollama and tells the router. It finds its own entry in the shared config by
// node id and follows config reloads like the router does; it runs the node's
// MLX servers (mlx-supervisor.ts) and its image, transcription and embedding
// services (services.ts), and reports them too.
import { withoutCredentials } from "../config/credentials/secrets.ts";
import { agentToken } from "../config/credentials/keys.ts";
import { probeOllama } from "../backends/ollama.ts";
import type { LiveConfig } from "../config/live.ts";
import { type NodeEntry, nodeAnswerCap } from "../config/schema.ts";
import { shortLine } from "../core/printable.ts";
import { type Heartbeat, MAX_CONFIG_ERROR, MAX_THERMAL_REASON, type OllamaSection, type ThermalReading } from "../fleet/heartbeat.ts";
import { log } from "../log.ts";
import { VERSION } from "../version.ts";
import { type SystemCollector, systemCollector } from "./collectors.ts";
import { startMlxSupervisor } from "./mlx-supervisor.ts";
import { startServices } from "./services.ts";

export const DEFAULT_OLLAMA = "http://127.0.0.1:11434";

export interface AgentOptions {
  nodeId: string;
  live: LiveConfig;
  /** --ollama: wins over the node's config entry. */
  ollamaUrl?: string;
  /** The node credential (HERD_NODE_TOKEN, --token-file); default: the config's for this node. */
  credential?: () => string | null;
  /** Delivers a heartbeat: POST to a remote router, or a direct call in the combined process. */
  send: (hb: Heartbeat) => Promise<void>;
  collector?: SystemCollector;
}

export interface AgentHandle {
  /** Sends one heartbeat now and returns what the local Ollama looked like. */
  beat(): Promise<OllamaSection>;
  /** Stops heartbeats and the MLX servers, and tells the router; resolves once they have exited. */
  stop(): Promise<void>;
}

export function startAgent(opts: AgentOptions): AgentHandle {
  const collector = opts.collector ?? systemCollector();
  const entry = (): NodeEntry | undefined => opts.live.config.nodes.find((n) => n.id === opts.nodeId);
  const ollamaUrl = () => opts.ollamaUrl ?? entry()?.ollama ?? DEFAULT_OLLAMA;
  let timer: Timer | null = null;
  let stopped = false;
  let lastOllamaError: string | null | undefined;
  let lastSendError: string | null | undefined;

  if (!entry()) log.info(`node ${opts.nodeId} has no entry in the config; running with defaults (Ollama at ${withoutCredentials(ollamaUrl())})`);
  const mlx = startMlxSupervisor({ nodeId: opts.nodeId, live: opts.live, entry, memory: () => collector.memory() });
  void mlx.reconcile();
  const services = startServices(opts.nodeId, opts.live, opts.credential ?? (() => agentToken(opts.live.config, opts.nodeId)));
  const unsubscribe = opts.live.onChange(() => {
    log.debug(`node ${opts.nodeId}: config reloaded`);
    void mlx.reconcile();
  });

  const beat = async (): Promise<OllamaSection> => {
    const url = ollamaUrl();
    const [ollama, memory, hardware, disks, thermal, embedding, offered] = await Promise.all([
      probeOllama(url, opts.live.config.timeouts.connectMs, nodeAnswerCap(opts.live.config)),
      collector.memory(),
      collector.hardware(),
      collector.disks(),
      collector.thermal(),
      collector.embedding?.() ?? {},
      services.report(),
    ]);
    // The first result is reported by the command that started the agent; after that, changes only.
    if (lastOllamaError !== undefined && ollama.error !== lastOllamaError) {
      if (ollama.error) log.warn(`node ${opts.nodeId}: Ollama at ${withoutCredentials(url)} unreachable (${ollama.error})`);
      else log.info(`node ${opts.nodeId}: Ollama at ${withoutCredentials(url)} is back`);
    }
    lastOllamaError = ollama.error;
    const hb: Heartbeat = {
      node_id: opts.nodeId,
      agent_version: VERSION,
      config_hash: opts.live.current.source.hash,
      // Its copy of the config refused on reload: invisible to the router otherwise, as the agent runs on.
      config_error: configError(opts.live),
      ollama_url: url,
      cpu: collector.cpu(),
      memory,
      hardware,
      ...disks,
      ...thermalFields(thermal),
      ...embedding,
      ...offered,
      ollama,
      mlx_servers: mlx.statuses(),
      mlx_bind_host: entry()?.mlxBindHost ?? "127.0.0.1",
      ...(entry()?.draining ? { draining: true } : {}),
    };
    // A beat under way as the agent stops must not follow its goodbye.
    if (stopped) return ollama;
    try {
      await opts.send(hb);
      if (lastSendError) log.info(`node ${opts.nodeId}: router reachable again`);
      lastSendError = null;
    } catch (e) {
      const message = (e as Error).message;
      if (message !== lastSendError) log.warn(`node ${opts.nodeId}: heartbeat not delivered (${message}); retrying every interval`);
      lastSendError = message;
    }
    return ollama;
  };

  const loop = async () => {
    await beat();
    if (!stopped) timer = setTimeout(loop, opts.live.config.heartbeat.intervalMs);
  };
  timer = setTimeout(loop, opts.live.config.heartbeat.intervalMs);

  return {
    beat,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      unsubscribe();
      services.stop();
      // A goodbye, so the router stops routing here now rather than when the beats time out; best effort.
      const goodbye = opts.send({ node_id: opts.nodeId, agent_version: VERSION, goodbye: true }).catch(() => {});
      await Promise.all([mlx.stop(), goodbye]);
    },
  };
}

/** Why the agent's copy of the config was refused, within the heartbeat's bound (null clears an earlier report). */
function configError(live: LiveConfig): string | null {
  const error = live.status().last_error;
  return error && shortLine(error.message, MAX_CONFIG_ERROR - 1);
}

/** A reading in the heartbeat's fields: a state in `thermal`, which every router reads, or why there is none. */
function thermalFields(reading: ThermalReading): Pick<Heartbeat, "thermal" | "thermal_unknown"> {
  return reading.state === "unknown" ? { thermal_unknown: reading.reason.slice(0, MAX_THERMAL_REASON) } : { thermal: { state: reading.state }, thermal_unknown: null };
}

/** Heartbeats over HTTP to a router elsewhere on the network, with the node credential when there is one. */
export function postTo(routerUrl: string, timeoutMs: number, token: () => string | null = () => null): (hb: Heartbeat) => Promise<void> {
  const url = new URL("/heartbeat", routerUrl);
  return async (hb) => {
    const credential = token();
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
      body: JSON.stringify(hb),
      signal: AbortSignal.timeout(timeoutMs),
    }).catch((e: Error) => {
      throw new Error(`router at ${routerUrl}: ${e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : e.message}`);
    });
    if (!res.ok) throw new Error(`router at ${routerUrl} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  };
}
