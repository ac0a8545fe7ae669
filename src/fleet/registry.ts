// Every node the router knows: declared in the config, reporting by heartbeat
// (agent nodes) or polled by the router itself (agentless nodes). Status is
// derived from the age of the last report: online → degraded → offline.
import type { Database } from "bun:sqlite";
import { type Config, type NodeEntry } from "../config/schema.ts";
import { bandwidthForChip } from "../core/chips.ts";
import { withoutCredentials } from "../config/credentials/secrets.ts";
import { isLoopback } from "../core/loopback.ts";
import { log } from "../log.ts";
import { recordEvent } from "../store/db.ts";
import { readSlots } from "../store/slots.ts";
import { sameModel } from "./model-name.ts";
import { isCloud } from "./node-models.ts";
import { defaultContext, defaultParallel } from "./ollama-releases.ts";
import { LearnedSlots } from "./slots.ts";
import type { Heartbeat, OllamaSection } from "./heartbeat.ts";

export type NodeStatus = "online" | "degraded" | "offline";

/** Ollama's own port: where an unproven heartbeat's node is reached, at the address it came from. */
const OLLAMA_PORT = 11434;
/** How long an unloaded model still counts as warm (its files are likely still in the page cache). */
const WARM_FOR_MS = 10 * 60_000;
/** Longer than any report takes to arrive: a report without a model pulled this long ago is the node's own news. */
export const PULL_SETTLE_MS = 30_000;
/** How long load/unload events are kept: the health checks look at the last hour. */
const LOAD_EVENTS_FOR_MS = 60 * 60_000;
/** A bound on them whatever a node reports. */
const MAX_LOAD_EVENTS = 1000;

/** A model appearing in or leaving a node's loaded models between two reports (ms epoch). */
export interface LoadEvent {
  model: string;
  event: "load" | "unload";
  at: number;
}

export interface NodeRecord {
  id: string;
  /** How the node reports: its own agent, or the router polling its Ollama. */
  source: "agent" | "poll" | null;
  status: NodeStatus;
  statusReason: string;
  firstSeen: number | null;
  lastSeen: number | null;
  lastAgentBeat: number | null;
  /** Ollama's URL as the agent reported it, rewritten to the address the router saw it from. */
  reportedOllamaUrl: string | null;
  report: Omit<Heartbeat, "node_id">;
  ollama: OllamaSection | null;
  /** When the node last came online (ms epoch). */
  onlineSince: number | null;
  /** Models the node unloaded, and when: reloading them soon after is cheaper (warm). */
  unloadedAt: Map<string, number>;
  /**
   * Models a pull through herd put on the node's disk, and when (ms epoch): a report gathered before the pull ended (a
   * poll already under way) must not take them off again. Kept for PULL_SETTLE_MS, after which the node's word wins.
   */
  pulledAt: Map<string, number>;
  /** Loads and unloads seen between successive reports in the last hour, oldest first. */
  loadEvents: LoadEvent[];
}

/** What is known of a node's machine, reported or declared; null where nothing says. */
export interface KnownHardware {
  memoryTotalGb: number | null;
  /** Peak memory bandwidth, GB/s. */
  bandwidthGbps: number | null;
  chip: string | null;
}

export class Registry {
  private nodes = new Map<string, NodeRecord>();
  private declared = new Map<string, NodeEntry>();
  private config: Config;
  /** The parallel slots of nodes that declare none, learned from their answers (and kept in the store). */
  readonly learnedSlots: LearnedSlots;

  constructor(
    config: Config,
    private readonly store: Database | null = null,
    private readonly now: () => number = Date.now,
  ) {
    this.config = config;
    this.learnedSlots = new LearnedSlots((id) => this.priorParallel(id), store ? readSlots(store) : []);
    this.sync(config);
  }

  /** Adopts a new config: declared nodes appear; nodes only the old config knew and nobody reports for go. */
  sync(config: Config): void {
    this.config = config;
    this.declared = new Map(config.nodes.map((n) => [n.id, n]));
    for (const id of this.declared.keys()) if (!this.nodes.has(id)) this.nodes.set(id, blank(id));
    for (const [id, node] of this.nodes) {
      if (!this.declared.has(id) && node.source !== "agent") this.nodes.delete(id);
    }
    this.tick();
  }

  entry(id: string): NodeEntry | undefined {
    return this.declared.get(id);
  }

  /** Concurrent requests per loaded model on the node: its declared `parallel`, else what herd learned, else its release's default. */
  parallel(id: string): number {
    return this.declared.get(id)?.parallel ?? this.learnedSlots.slots(id) ?? this.priorParallel(id);
  }

  private priorParallel(id: string): number {
    return defaultParallel(this.nodes.get(id)?.ollama?.version);
  }

  /**
   * The context the node's Ollama loads a model with when a request asks none, before the model's trained context
   * caps it: its declared `contextLength` (OLLAMA_CONTEXT_LENGTH), else its release's choice for its memory.
   */
  defaultContext(node: NodeRecord): number {
    return this.defaultContextOf(node).numCtx;
  }

  /** defaultContext and where it comes from: the config, the node's release and memory, or the smallest tier assumed. */
  defaultContextOf(node: NodeRecord): { numCtx: number; source: "config" | "release" | "assumed" } {
    const declared = this.declared.get(node.id)?.contextLength;
    if (declared !== undefined) return { numCtx: declared, source: "config" };
    const { numCtx, known } = defaultContext(node.ollama?.version, this.hardware(node).memoryTotalGb);
    return { numCtx, source: known ? "release" : "assumed" };
  }

  /** Where the node's `parallel` comes from, in the words of the other figures' sources: its config entry, its answers, or the default. */
  parallelSource(id: string): "config" | "learned" | "prior" {
    if (this.declared.get(id)?.parallel !== undefined) return "config";
    return this.learnedSlots.slots(id) === null ? "prior" : "learned";
  }

  /**
   * The node's machine as routing reads it: what its agent reports, else what its config entry declares
   * (`nodes[].hardware`, for an agentless node), else null.
   */
  hardware(node: NodeRecord): KnownHardware {
    const r = node.report;
    const declared = this.declared.get(node.id)?.hardware;
    const chip = r.hardware?.chip || declared?.chip || null;
    return {
      memoryTotalGb: r.memory?.total_gb ?? r.hardware?.memory_total_gb ?? declared?.memoryGb ?? null,
      bandwidthGbps: r.hardware?.memory_bandwidth_gbps || declared?.bandwidthGbps || (declared?.chip && bandwidthForChip(declared.chip)) || null,
      chip,
    };
  }

  /** The node's peak memory bandwidth (GB/s) as reported or declared; null when unknown or the node is not known. */
  bandwidthGbps(id: string): number | null {
    const node = this.nodes.get(id);
    return node ? this.hardware(node).bandwidthGbps : null;
  }

  get(id: string): NodeRecord | undefined {
    return this.nodes.get(id);
  }

  all(): NodeRecord[] {
    return [...this.nodes.values()];
  }

  /**
   * Records an agent heartbeat; `remoteAddress` is where it came from. `proven`: it carried the node's credential,
   * or came from the agent inside this process. Anyone may send an unproven one (open mode: no node credential),
   * so it cannot choose where herd sends prompts (the config's address, else its own source address at Ollama's
   * port) nor take the node out of service (its `draining` is ignored; for a node herd polls, the poll alone
   * says what it holds and whether it is up).
   */
  heartbeat(hb: Heartbeat, remoteAddress: string | null, proven: boolean): NodeRecord {
    const node = this.nodes.get(hb.node_id) ?? blank(hb.node_id);
    if (hb.goodbye) return this.goodbye(node);
    if (!this.nodes.has(hb.node_id)) this.nodes.set(hb.node_id, node);
    const { node_id: _, ...report } = hb;
    const polled = !proven && Boolean(this.declared.get(hb.node_id)?.ollama);
    if (proven) {
      if (hb.ollama_url) node.reportedOllamaUrl = reachableUrl(hb.ollama_url, remoteAddress);
    } else {
      node.reportedOllamaUrl = remoteAddress ? `http://${urlHost(remoteAddress)}:${OLLAMA_PORT}` : null;
      delete report.ollama_url;
      delete report.draining;
      if (polled) delete report.ollama;
    }
    node.report = { ...node.report, ...report };
    // A node herd polls is up when its poll says so, whatever an unproven heartbeat claims.
    if (polled) return node;
    if (report.ollama) this.setOllama(node, report.ollama);
    if (node.lastAgentBeat === null || this.now() - node.lastAgentBeat > this.config.heartbeat.offlineMs) {
      log.info(`node ${hb.node_id}: agent ${hb.agent_version ?? "?"} joined${remoteAddress ? ` from ${remoteAddress}` : ""}`);
    }
    node.source = "agent";
    node.lastAgentBeat = this.now();
    this.seen(node);
    return node;
  }

  /**
   * An agent stopping: what it reported goes now. The node is offline until its next report; one the config
   * gives an Ollama URL is polled again from the next poll on.
   */
  private goodbye(node: NodeRecord): NodeRecord {
    if (node.lastAgentBeat === null) return node;
    log.info(`node ${node.id}: agent left (stopped)`);
    node.lastAgentBeat = null;
    node.lastSeen = null;
    node.report = {};
    node.ollama = null;
    this.transition(node, "offline", "its agent stopped");
    return node;
  }

  /** Records what the router's own poll of an agentless node found. */
  polled(id: string, ollama: OllamaSection): void {
    const node = this.nodes.get(id);
    if (!node) return;
    // A poll that set out before the node's agent spoke (its first beat came while the poll was under way) is older
    // than that word, and must not take the node back from it.
    if (!this.agentGone(node)) return;
    // The poll takes over from an agent whose heartbeats stopped: what it last said of the machine (memory,
    // hardware, services) is stale, and routing must not go on reading it.
    if (node.source === "agent" && this.agentGone(node)) node.report = {};
    if (!ollama.reachable) {
      // What is on its disk is still there: a request for it gets a 503 while the node is down, not a 404.
      node.ollama = { ...ollama, models_available: node.ollama?.models_available ?? [] };
      node.statusReason = `Ollama at ${this.shownOllamaUrl(node)}: ${ollama.error}`;
      this.tick();
      return;
    }
    this.setOllama(node, ollama);
    node.source = "poll";
    this.seen(node);
  }

  private setOllama(node: NodeRecord, next: OllamaSection): void {
    const stillLoaded = new Set(next.models_loaded.map((m) => m.name));
    const now = this.now();
    for (const m of node.ollama?.models_loaded ?? []) if (!stillLoaded.has(m.name)) node.unloadedAt.set(m.name, now);
    for (const [name, at] of node.unloadedAt) if (now - at > WARM_FOR_MS || stillLoaded.has(name)) node.unloadedAt.delete(name);
    recordLoadEvents(node, next, now);
    node.ollama = withRecentPulls(node, next, now);
  }

  /** Declared nodes with an Ollama URL whose agent is not reporting: the router polls those. */
  pollTargets(): { id: string; url: string }[] {
    return [...this.declared.values()].filter((n) => n.ollama && this.agentGone(this.nodes.get(n.id))).map((n) => ({ id: n.id, url: n.ollama! }));
  }

  /** No heartbeat from the node's agent for heartbeat.offlineMs, or never one. */
  private agentGone(node: NodeRecord | undefined): boolean {
    return !((node?.lastAgentBeat ?? 0) > this.now() - this.config.heartbeat.offlineMs);
  }

  ollamaUrl(node: NodeRecord): string | null {
    return this.declared.get(node.id)?.ollama ?? node.reportedOllamaUrl;
  }

  /** The node's Ollama as anything herd shows says it: without a user:password@ the config may give it. */
  shownOllamaUrl(node: NodeRecord): string | null {
    return withoutCredentials(this.ollamaUrl(node));
  }

  /** A service the node's agent reports on `port` (images, embeddings): at the address the router reaches the node's Ollama by. */
  serviceUrl(node: NodeRecord, port: number): string | null {
    const ollama = this.ollamaUrl(node);
    if (!ollama || !URL.canParse(ollama)) return null;
    const url = new URL(ollama);
    url.port = String(port);
    return url.origin;
  }

  /** Routing may send the node's Ollama requests: the node is online and its Ollama answered at an address the router knows. */
  ollamaServing(node: NodeRecord): boolean {
    return node.status === "online" && Boolean(node.ollama?.reachable) && this.ollamaUrl(node) !== null;
  }

  /** Why routing leaves the node out whatever the model (a model too big for it is the request's own reason); null when it does not. */
  exclusion(node: NodeRecord): "offline" | "ollama unreachable" | "draining" | null {
    if (node.status !== "online") return "offline";
    if (!this.ollamaServing(node)) return "ollama unreachable";
    return this.isDraining(node) ? "draining" : null;
  }

  isDraining(node: NodeRecord): boolean {
    return Boolean(this.declared.get(node.id)?.draining || node.report.draining);
  }

  /** Re-derives every node's status from the age of its last report. */
  tick(): void {
    const { timeoutMs, offlineMs } = this.config.heartbeat;
    const now = this.now();
    for (const node of this.nodes.values()) {
      const age = node.lastSeen === null ? Infinity : now - node.lastSeen;
      const status: NodeStatus = age > offlineMs ? "offline" : age > timeoutMs ? "degraded" : "online";
      if (status === node.status) continue;
      const reason =
        node.lastSeen === null
          ? node.statusReason || "not reached yet"
          : status === "online"
            ? ""
            : `no ${node.source === "agent" ? "heartbeat" : "answer"} for ${Math.round(age / 1000)} s${node.statusReason ? `; ${node.statusReason}` : ""}`;
      this.transition(node, status, reason);
    }
  }

  private seen(node: NodeRecord): void {
    const now = this.now();
    const firstContact = node.firstSeen === null;
    node.firstSeen ??= now;
    node.lastSeen = now;
    node.statusReason = "";
    // First contact is announced by whoever made it (join line, start-up report), not as a transition.
    if (node.status !== "online") this.transition(node, "online", "", !firstContact);
  }

  private transition(node: NodeRecord, status: NodeStatus, reason: string, announce = true): void {
    const from = node.status;
    node.status = status;
    if (status === "online" && from !== "online") node.onlineSince = this.now();
    node.statusReason = reason;
    if (from === status) return;
    const line = `node ${node.id}: ${from} → ${status}${reason ? ` (${reason})` : ""}`;
    if (!announce) log.debug(line);
    else if (status === "online") log.info(line);
    else log.warn(line);
    if (this.store) recordEvent(this.store, "INSERT INTO node_events (at, node_id, status, reason) VALUES (?, ?, ?, ?)", [this.now() / 1000, node.id, status, reason]);
  }
}

function blank(id: string): NodeRecord {
  return {
    id,
    source: null,
    status: "offline",
    statusReason: "",
    firstSeen: null,
    lastSeen: null,
    lastAgentBeat: null,
    reportedOllamaUrl: null,
    report: {},
    ollama: null,
    onlineSince: null,
    unloadedAt: new Map(),
    pulledAt: new Map(),
    loadEvents: [],
  };
}

/** The report, with the models herd saw pulled onto the node since a report could have been gathered without them. */
function withRecentPulls(node: NodeRecord, next: OllamaSection, now: number): OllamaSection {
  const missing: { name: string }[] = [];
  for (const [name, at] of node.pulledAt) {
    if (now - at > PULL_SETTLE_MS) node.pulledAt.delete(name);
    else if (!next.models_available.some((m) => sameModel(m.name, name))) missing.push({ name });
  }
  return missing.length ? { ...next, models_available: [...next.models_available, ...missing] } : next;
}

// Only between two answers: a node that was unreachable did not unload everything, nor reload it on its return.
function recordLoadEvents(node: NodeRecord, next: OllamaSection, now: number): void {
  const previous = node.ollama;
  if (previous?.reachable && next.reachable) {
    const before = new Set(previous.models_loaded.map((m) => m.name));
    const after = new Set(next.models_loaded.map((m) => m.name));
    for (const model of after) if (!before.has(model)) node.loadEvents.push({ model, event: "load", at: now });
    for (const model of before) if (!after.has(model)) node.loadEvents.push({ model, event: "unload", at: now });
  }
  const recent = node.loadEvents.findIndex((e) => now - e.at <= LOAD_EVENTS_FOR_MS);
  const stale = recent === -1 ? node.loadEvents.length : recent;
  node.loadEvents.splice(0, Math.max(stale, node.loadEvents.length - MAX_LOAD_EVENTS));
}

// An agent reports its Ollama as it sees it (often 127.0.0.1); the router must use the agent's LAN address instead.
function reachableUrl(reported: string, remoteAddress: string | null): string {
  if (!remoteAddress || !URL.canParse(reported)) return reported;
  const url = new URL(reported);
  if (!isLoopback(url.hostname) || isLoopback(remoteAddress)) return reported;
  url.hostname = urlHost(remoteAddress);
  return url.toString().replace(/\/$/, "");
}

/** A socket's address as a URL's host: IPv6 in brackets, an IPv4-mapped one as IPv4. */
function urlHost(address: string): string {
  return address.includes(":") && !address.startsWith("::ffff:") ? `[${address}]` : address.replace("::ffff:", "");
}

/** The node has the model loaded right now. */
export function loadedOn(node: NodeRecord, model: string): boolean {
  return (node.ollama?.models_loaded ?? []).some((m) => sameModel(m.name, model));
}

/**
 * herd sends the node `model` with this num_ctx: the model's runner has that context from now on, so say so now rather
 * than at the next report (up to a heartbeat later). A request sized to the old context meanwhile would make Ollama
 * reload the model, twice: to the old size, then back for the next long prompt.
 */
export function markRunnerContext(node: NodeRecord, model: string, numCtx: number): void {
  const ollama = node.ollama;
  if (!ollama?.models_loaded.some((m) => sameModel(m.name, model) && m.context_length !== numCtx)) return;
  // A new list, never an edit: the routing views of a node's models are cached per list.
  ollama.models_loaded = ollama.models_loaded.map((m) => (sameModel(m.name, model) ? { ...m, context_length: numCtx } : m));
}

/** The node has the model on disk. */
export function onDisk(node: NodeRecord, model: string): boolean {
  return (node.ollama?.models_available ?? []).some((m) => sameModel(m.name, model));
}

/** The node lists the model as an Ollama cloud model (node-models.ts isCloud). */
export function cloudOn(node: NodeRecord, model: string): boolean {
  return (node.ollama?.models_available ?? []).some((m) => sameModel(m.name, model) && isCloud(m));
}

/** The model's size on the node's disk in bytes, as its Ollama lists it; 0 when unknown. Read as each answer ends. */
export function diskBytes(node: NodeRecord | undefined, model: string): number {
  const models = node?.ollama?.models_available ?? [];
  // The served name is the node's own as a rule: an exact match first spares normalizing every name (22 µs for 100).
  return (models.find((m) => m.name === model) ?? models.find((m) => sameModel(m.name, model)))?.size ?? 0;
}

/** The largest context window `model` is loaded with on any online node, if it is loaded anywhere. */
export function loadedContext(registry: Registry, model: string): number | undefined {
  const lengths = registry
    .all()
    .filter((n) => n.status === "online")
    .flatMap((n) => n.ollama?.models_loaded ?? [])
    .filter((m) => sameModel(m.name, model) && m.context_length)
    .map((m) => m.context_length!);
  return lengths.length ? Math.max(...lengths) : undefined;
}
