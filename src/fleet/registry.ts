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
import { heldToDeclared, SERVICE_FIELDS } from "./declared-services.ts";
import { sameModel } from "./model-name.ts";
import { isCloud } from "./node-models.ts";
import { automaticContextShown, defaultContext, defaultParallel, MAX_LOADED_MODELS } from "./ollama-releases.ts";
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
/** A bound on them whatever a node reports; and on the models kept as warm. */
const MAX_LOAD_EVENTS = 1000;
const MAX_WARM = 1000;
/** The node_events rows kept, the newest: an agent that comes and goes (with its credential) may say so as often as it likes. */
export const MAX_NODE_EVENTS = 10_000;

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
  /** The last heartbeat of the node's agent (with or without its credential); null: none, or the agent left. */
  lastAgentBeat: number | null;
  /**
   * That heartbeat carried no credential (open mode): anyone may have sent it. For a node herd polls it is a sign of the
   * agent's life and nothing more; for one without an address, its report and its Ollama's models are such a heartbeat's
   * word (`unprovenWord`), which never decides what a model's name is while a node herd trusts holds it (catalog.ts).
   */
  unproven: boolean;
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
  /** The most memory its loaded models took together in any report, in GB: the least it has (its Ollama loaded them all). */
  mostLoadedGb: number;
  /** The biggest context a loaded model showed in any report: what it says of the node's automatic context (ollama-releases.ts automaticContextShown). */
  mostContextShown: number;
  /**
   * Between two reports its Ollama loaded a model and unloaded more than its count of models (MAX_LOADED_MODELS)
   * explains: it ran short of room, so its memory is about the most it held.
   */
  unloadedForRoom: boolean;
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

  /**
   * defaultContext and where it comes from: the config, the node's release and memory, the contexts its loaded models
   * showed (its memory unknown), or the smallest tier assumed.
   */
  defaultContextOf(node: NodeRecord): { numCtx: number; source: "config" | "release" | "shown" | "assumed" } {
    const declared = this.declared.get(node.id)?.contextLength;
    if (declared !== undefined) return { numCtx: declared, source: "config" };
    const { numCtx, known } = defaultContext(node.ollama?.version, this.hardware(node).memoryTotalGb);
    if (known) return { numCtx, source: "release" };
    const shown = automaticContextShown(node.mostContextShown);
    return shown ? { numCtx: shown.numCtx, source: "shown" } : { numCtx, source: "assumed" };
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
   * port) nor take the node out of service (its `draining` and `goodbye` are ignored), and of its services it says
   * only the state of those the config declares (declared-services.ts). For a node herd polls, the poll and the
   * config alone say what it holds, whether it is up and what it is (docs/security.md, open mode).
   */
  heartbeat(hb: Heartbeat, remoteAddress: string | null, proven: boolean): NodeRecord {
    const node = this.nodes.get(hb.node_id) ?? blank(hb.node_id);
    if (hb.goodbye) return proven ? this.goodbye(node) : node;
    if (!this.nodes.has(hb.node_id)) this.nodes.set(hb.node_id, node);
    const entry = this.declared.get(hb.node_id);
    const polled = !proven && Boolean(entry?.ollama);
    this.agentBeat(node, hb, remoteAddress, proven, polled);
    const { node_id: _, ...report } = hb;
    if (proven) {
      if (hb.ollama_url) node.reportedOllamaUrl = reachableUrl(hb.ollama_url, remoteAddress);
      node.report = { ...node.report, ...report };
    } else {
      const said = { ...node.report, ...report };
      node.report = heldToDeclared(polled ? servicesOf(said) : withoutSteering(said), entry);
      // A node herd polls: its poll says what it holds and whether it is up, its config what it is.
      if (polled) return node;
      node.reportedOllamaUrl = remoteAddress ? `http://${urlHost(remoteAddress)}:${OLLAMA_PORT}` : null;
    }
    if (report.ollama) this.setOllama(node, report.ollama);
    node.source = "agent";
    this.seen(node);
    return node;
  }

  /** The agent's beat, and its join logged: when it was gone, or now reports with (or without) a credential it did not before. */
  private agentBeat(node: NodeRecord, hb: Heartbeat, from: string | null, proven: boolean, polled: boolean): void {
    this.expireAgent(node);
    if (node.lastAgentBeat === null || node.unproven === proven) {
      const open = polled
        ? `; herd polls its Ollama at ${this.ollamaUrl(node)} and takes from such heartbeats only the state of the services the config declares on it, not its memory, labels or version: give the node a credential (herd node --enroll, docs/security.md)`
        : " (open mode)";
      log.info(`node ${node.id}: agent ${hb.agent_version ?? "?"} joined${from ? ` from ${from}` : ""}${proven ? "" : ` without a credential${open}`}`);
    }
    node.lastAgentBeat = this.now();
    node.unproven = !proven;
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
    node.mostLoadedGb = 0;
    node.mostContextShown = 0;
    node.unloadedForRoom = false;
    this.transition(node, "offline", "its agent stopped");
    return node;
  }

  /** Records what the router's own poll of an agentless node found. */
  polled(id: string, ollama: OllamaSection): void {
    const node = this.nodes.get(id);
    if (!node) return;
    // A poll that set out before the node's agent spoke with its credential (its first beat came while the poll was
    // under way) is older than that word, and must not take the node back from it.
    if (this.provenAgent(node)) return;
    // The poll takes over from an agent whose heartbeats stopped (or now come without a credential): what it last
    // said of the machine (memory, hardware, services) is stale, and routing must not go on reading it.
    if (node.source === "agent") node.report = {};
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
    // The oldest first (a Map keeps insertion order): a report may unload a thousand new names a beat.
    for (const name of node.unloadedAt.keys()) if (node.unloadedAt.size > MAX_WARM) node.unloadedAt.delete(name);
    recordLoadEvents(node, next, now);
    node.mostLoadedGb = Math.max(node.mostLoadedGb, next.models_loaded.reduce((sum, m) => sum + m.size_gb, 0));
    node.mostContextShown = Math.max(node.mostContextShown, ...next.models_loaded.map((m) => m.context_length ?? 0));
    node.ollama = withRecentPulls(node, next, now);
  }

  /** Declared nodes with an Ollama URL and no agent reporting with its credential: the router polls those. */
  pollTargets(): { id: string; url: string }[] {
    return [...this.declared.values()].filter((n) => n.ollama && !this.provenAgent(this.nodes.get(n.id))).map((n) => ({ id: n.id, url: n.ollama! }));
  }

  /** A heartbeat from the node's agent within heartbeat.offlineMs. */
  private agentReporting(node: NodeRecord | undefined): boolean {
    return (node?.lastAgentBeat ?? 0) > this.now() - this.config.heartbeat.offlineMs;
  }

  /** The node's agent reports, with its credential (or from inside this process). */
  private provenAgent(node: NodeRecord | undefined): boolean {
    return this.agentReporting(node) && !node!.unproven;
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

  /** An agent silent for heartbeat.offlineMs has left: said once, whether a tick or its next beat sees it first. */
  private expireAgent(node: NodeRecord): void {
    if (node.lastAgentBeat === null || this.agentReporting(node)) return;
    log.info(`node ${node.id}: agent left (no heartbeat for ${Math.round((this.now() - node.lastAgentBeat) / 1000)} s)`);
    node.lastAgentBeat = null;
    // A node herd polls is its poll's alone from now on; one without an address keeps its last report, offline.
    if (this.declared.get(node.id)?.ollama) node.report = {};
  }

  /** Re-derives every node's status from the age of its last report; an agent silent for heartbeat.offlineMs has left. */
  tick(): void {
    const { timeoutMs, offlineMs } = this.config.heartbeat;
    const now = this.now();
    for (const node of this.nodes.values()) {
      this.expireAgent(node);
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
    if (!this.store) return;
    recordEvent(this.store, "INSERT INTO node_events (at, node_id, status, reason) VALUES (?, ?, ?, ?)", [this.now() / 1000, node.id, status, reason]);
    recordEvent(this.store, "DELETE FROM node_events WHERE id <= (SELECT MAX(id) FROM node_events) - ?", [MAX_NODE_EVENTS]);
  }
}

/** An unproven report of a node without an address: not where the node is, nor that it drains. */
function withoutSteering({ ollama_url: _url, draining: _draining, ...report }: NodeRecord["report"]): NodeRecord["report"] {
  return report;
}

/** An unproven report of a node herd polls: its services alone. */
function servicesOf(report: NodeRecord["report"]): NodeRecord["report"] {
  return Object.fromEntries(SERVICE_FIELDS.filter((f) => report[f] !== undefined).map((f) => [f, report[f]]));
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
    unproven: false,
    reportedOllamaUrl: null,
    report: {},
    ollama: null,
    onlineSince: null,
    unloadedAt: new Map(),
    pulledAt: new Map(),
    loadEvents: [],
    mostLoadedGb: 0,
    mostContextShown: 0,
    unloadedForRoom: false,
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
    const loads = [...after].filter((model) => !before.has(model));
    const unloads = [...before].filter((model) => !after.has(model));
    for (const model of loads) node.loadEvents.push({ model, event: "load", at: now });
    for (const model of unloads) node.loadEvents.push({ model, event: "unload", at: now });
    if (loads.length && unloads.length > Math.max(0, before.size + loads.length - MAX_LOADED_MODELS)) node.unloadedForRoom = true;
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

/** What the node's report says (and, from its agent, its Ollama's models) came without its credential: anyone may have sent it. */
export function unprovenWord(node: NodeRecord): boolean {
  return node.source === "agent" && node.unproven;
}

/** A node whose word herd trusts (its own poll, or its agent's with the credential) has the model on disk. */
export function provenOnDisk(registry: Registry, model: string): boolean {
  return registry.all().some((n) => !unprovenWord(n) && onDisk(n, model));
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

/**
 * herd sends the node a request that loads a model, which it expects to make Ollama evict these idle ones (least
 * recently used first, to make room): they are gone from the node's loaded list now, not at the next report (up to a
 * heartbeat later), so the estimate prices their next request's load rather than sending it there as if resident.
 */
export function markEvicted(node: NodeRecord, models: readonly string[], now = Date.now()): void {
  const ollama = node.ollama;
  if (!models.length || !ollama?.models_loaded.some((m) => models.some((e) => sameModel(m.name, e)))) return;
  for (const m of models) node.unloadedAt.set(m, now);
  // A new list, never an edit: the routing views of a node's models are cached per list.
  ollama.models_loaded = ollama.models_loaded.filter((m) => !models.some((e) => sameModel(m.name, e)));
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
