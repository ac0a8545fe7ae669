// Keeps pinned models loaded: each cycle it asks every online node's Ollama to
// load the pins the router does not see resident there. POST /fleet/pin warms
// through the same Warmer, so one node:model never loads twice at once. The
// load itself is the Ollama backend's (backends/ollama.ts:loadModel), given by
// the runtime: the fleet decides what to load where, not how to ask.
import { log } from "../log.ts";
import type { LiveConfig } from "../config/live.ts";
import type { Config } from "../config/schema.ts";
import { shortLine } from "../core/printable.ts";
import { normalizeModelName } from "./model-name.ts";
import { loadableUrl, type Pins } from "./pins.ts";
import { cloudOn, loadedOn, onDisk, type Registry } from "./registry.ts";

// A cycle every 12 heartbeats: 60 s at the default 5 s, seconds under the fast heartbeats of tests and demos.
const HEARTBEATS_PER_CYCLE = 12;
/** How long a load's error may be as herd keeps, logs and shows it: a node's text, so one bounded line. */
const MAX_LOAD_ERROR = 500;
/** Node:model loads whose failure is kept (the oldest go first): more than any fleet pins or replicates. */
const MAX_FAILURES = 256;

/** How often the preloader looks for pins to load. */
export function preloadCycleMs(config: Pick<Config, "heartbeat">): number {
  return HEARTBEATS_PER_CYCLE * config.heartbeat.intervalMs;
}

/**
 * How long a warmed model stays: "forever" for a pin (until it is unpinned), "while used" for a replica herd warmed
 * ahead of a queue, which then goes when the node's keep-alive runs out after its last request, as any model does.
 */
export type Keep = "forever" | "while used";

/** Has the Ollama at `url` load `model` and keep it as `keep` says; resolves to how long the load took (ns), rejects with why not. */
export type LoadModel = (url: string, model: string, timeoutMs: number, keep: Keep) => Promise<number>;

/**
 * A load on a node as the Health page tells it: under way since (ms epoch), or the last one failed, when and why
 * (kept until a load of it works). A pinned model's load takes up to a minute on a real Mac.
 */
export type LoadState = { node_id: string; model: string } & ({ state: "loading"; since: number } | { state: "failed"; at: number; error: string });

/** Loads models on nodes, one load per node:model at a time: a warm while one runs shares it. */
export class Warmer {
  private readonly loading = new Map<string, { promise: Promise<void>; state: LoadState }>();
  private readonly failed = new Map<string, LoadState>();

  /**
   * `loaded`: told of each load's duration (what the learned speeds keep). `sent`: told of each load as it goes, and
   * returns what to tell as it ends (the node's loads, fleet/node-loads.ts, which the ones routed behind it wait for).
   */
  constructor(
    private readonly load: LoadModel,
    private readonly loaded: (nodeId: string, model: string, loadNs: number) => void = () => {},
    private readonly sent: (nodeId: string, model: string) => () => void = () => () => {},
  ) {}

  /** Rejects with the node's error as one bounded line. */
  warm(nodeId: string, url: string, model: string, timeoutMs: number, keep: Keep = "forever"): Promise<void> {
    const key = `${url} ${normalizeModelName(model)}`;
    const node = `${nodeId} ${normalizeModelName(model)}`;
    let load = this.loading.get(key);
    if (!load) {
      const ended = this.sent(nodeId, model);
      const promise = this.load(url, model, timeoutMs, keep).finally(ended).then(
        (ns) => {
          this.failed.delete(node);
          this.loaded(nodeId, model, ns);
        },
        (e: Error) => {
          const error = shortLine(e.message, MAX_LOAD_ERROR);
          this.failed.delete(node);
          this.failed.set(node, { node_id: nodeId, model, state: "failed", at: Date.now(), error });
          for (const oldest of this.failed.keys()) if (this.failed.size > MAX_FAILURES) this.failed.delete(oldest);
          throw new Error(error);
        },
      ).finally(() => this.loading.delete(key));
      load = { promise, state: { node_id: nodeId, model, state: "loading", since: Date.now() } };
      this.loading.set(key, load);
    }
    return load.promise;
  }

  /** The loads under way, and those whose last try failed. */
  states(): LoadState[] {
    return [...[...this.loading.values()].map((l) => l.state), ...this.failed.values()];
  }
}

/** What the preloader reads: the config, the pins, the nodes, and what loads a model on one. */
interface PreloadSources {
  live: LiveConfig;
  pins: Pins;
  registry: Registry;
  warmer: Warmer;
}

export function startPreloader(rt: PreloadSources, intervalMs = () => preloadCycleMs(rt.live.config)): { stop(): void } {
  const pins = rt.pins;
  const warned = new Set<string>();
  const warnOnce = (key: string, message: string) => {
    if (!warned.has(key)) log.warn(message);
    warned.add(key);
  };

  const reload = async (nodeId: string, url: string, models: string[]) => {
    for (const model of models) {
      try {
        await rt.warmer.warm(nodeId, url, model, rt.live.config.timeouts.firstByteMs);
        log.info(`preloader: reloaded pinned ${model} on ${nodeId}`);
      } catch (e) {
        log.warn(`preloader: pinned ${model} did not load on ${nodeId}: ${(e as Error).message}`);
      }
    }
  };

  const cycle = () => {
    const { enabled, maxCount } = rt.live.config.preloader;
    if (!enabled) return;
    for (const node of rt.registry.all()) {
      const url = loadableUrl(rt.registry, node);
      if (!url) continue;
      const pinned = pins.on(node.id).map((p) => p.model);
      const kept = pinned.slice(0, maxCount);
      if (pinned.length > maxCount) {
        warnOnce(`${node.id} ${pinned.length}`, `node ${node.id} has ${pinned.length} pins but preloader.maxCount is ${maxCount}; keeping only ${kept.join(", ")} loaded`);
      }
      const missing = kept.filter((m) => !loadedOn(node, m));
      for (const m of missing.filter((m) => !onDisk(node, m))) {
        warnOnce(`${node.id} ${m}`, `preloader: pinned ${m} is not on disk on ${node.id}; pull it there (the preloader does not pull)`);
      }
      for (const m of missing.filter((m) => cloudOn(node, m))) warnOnce(`${node.id} ${m}`, `preloader: pinned ${m} is an Ollama cloud model; it runs at ollama.com, nothing to load on ${node.id}`);
      // Loads on one node go one after another, as Ollama would take them anyway.
      void reload(node.id, url, missing.filter((m) => onDisk(node, m) && !cloudOn(node, m)));
    }
  };

  let timer = setTimeout(function loop() {
    cycle();
    timer = setTimeout(loop, intervalMs());
  }, intervalMs());
  return { stop: () => clearTimeout(timer) };
}
