// Fleet overview: header totals, a card per node and the queues, redrawn from
// every snapshot of the live stream (GET /dashboard/events).
import { SEVERITY_KIND, actions, badge, empty, every, fmt, getJson, h, liveEvents, meter, mount, page, panel, section, start, stats, table } from "./herd.js";

const live = h("span", { class: "live" }, "Connecting…");
const header = h("div");
const nodes = h("div");
const queues = h("div");
const traces = h("div");
let totals = null;
let snapshot = null;

start(async () => {
  actions(live);
  page(header, section("Nodes", "live, every 2 s", nodes), panel("Queues", { subtitle: "Per node and model", flush: true }, queues), panel("Recent requests", { flush: true }, traces));
  every(10_000, async () => {
    totals = await getJson("/dashboard/api/overview");
    drawHeader();
  });
  every(10_000, async () => drawTraces((await getJson("/dashboard/api/traces?limit=8")).traces));
  liveEvents(
    "/dashboard/events",
    (next) => {
      snapshot = next;
      drawHeader();
      drawNodes(snapshot.nodes);
      drawQueues(Object.entries(snapshot.queues).map(([key, q]) => ({ key, ...q })));
    },
    setLive,
  );
});

function setLive(on) {
  live.className = `live ${on ? "on" : "off"}`;
  live.textContent = on ? "Live" : "Reconnecting…";
}

function drawHeader() {
  const list = snapshot?.nodes ?? [];
  const online = list.filter((n) => n.status === "online");
  const queued = Object.values(snapshot?.queues ?? {});
  mount(
    header,
    stats([
      { label: "Nodes online", value: snapshot ? `${online.length} / ${list.length}` : "—", hint: list.length ? `${list.length - online.length} not online` : "none declared" },
      { label: "Models loaded", value: fmt.int(online.reduce((n, node) => n + node.models_loaded_count, 0)), hint: "resident in memory" },
      { label: "In flight", value: fmt.int(queued.reduce((n, q) => n + q.in_flight, 0)), hint: `${fmt.int(queued.reduce((n, q) => n + q.pending, 0))} queued` },
      { label: "Requests", value: fmt.compact(totals?.total_requests), hint: "all time" },
      { label: "Tokens", value: fmt.compact(totals?.total_tokens), hint: totals ? `${fmt.compact(totals.total_completion_tokens)} generated` : "" },
      { label: "Models used", value: fmt.int(totals?.models_count), hint: "all time" },
      { label: "Store", value: totals ? `${fmt.num(totals.store.bytes / MB)} MB` : "—", hint: totals ? storeHint(totals.store) : "" },
    ]),
  );
}

const MB = 1024 * 1024;

/** What the store keeps: its traces, and store.traces' limits (0: none). */
function storeHint(store) {
  const limits = [store.max_age_days && `${store.max_age_days} days`, store.max_mb && `${fmt.int(store.max_mb)} MB`].filter(Boolean);
  return `${fmt.compact(store.traces)} traces${limits.length ? `, kept ${limits.join(" / ")}` : ""}`;
}

function drawNodes(list) {
  if (!list.length) return mount(nodes, empty("No nodes yet.", "Declare nodes in herd.config.ts, or run `herd node --router <this router>` on a Mac."));
  mount(nodes, h("div", { class: "grid" }, list.map(nodeCard)));
}

function nodeCard(n) {
  const hw = n.hardware;
  const loaded = n.ollama?.models_loaded ?? [];
  // A config's nodes[].hardware may say the memory alone: no chip or cores to name then.
  const sub = [hw?.chip, hw?.cores_physical && `${hw.cores_physical} cores`, n.ollama?.version && `Ollama ${n.ollama.version}`, n.source === "poll" ? "polled" : n.source === "agent" ? "agent" : null].filter(Boolean);
  const mem = n.memory;
  const memTone = mem && { nominal: "ok", warning: "warn", critical: "crit" }[mem.pressure];
  return h(
    "article",
    { class: `panel node ${n.status}`, "data-node": n.node_id, "data-status": n.status },
    h(
      "div",
      { class: "node-head" },
      h("div", { style: { flex: "1" } }, h("div", { class: "node-name" }, n.node_id), h("div", { class: "node-sub" }, sub.join(" · ") || "no hardware reported")),
      runsBadge(n),
      n.draining && badge("draining", "warn"),
      badge(n.status, SEVERITY_KIND[n.status], "status"),
    ),
    h(
      "div",
      { class: "node-body" },
      n.status !== "online" && n.status_reason && h("div", { class: "reason" }, n.status_reason),
      h(
        "div",
        { class: "kv" },
        h("span", { class: "k" }, "CPU"),
        n.cpu ? meter(n.cpu.utilization_pct / 100, fmt.pct(n.cpu.utilization_pct)) : h("span", { class: "muted small" }, "not reported (no agent)"),
        h("span", { class: "k" }, "Memory"),
        mem ? h("div", { title: `memory pressure: ${mem.pressure}` }, meter(mem.used_gb / mem.total_gb, `${fmt.gb(mem.used_gb)} / ${fmt.gb(mem.total_gb)}`, memTone)) : h("span", { class: "muted small" }, "not reported (no agent)"),
        diskRows(n),
        thermalRow(n.thermal),
        h("span", { class: "k" }, "Requests"),
        h("span", { class: "num small" }, `${fmt.int(n.ollama?.requests_active ?? 0)} active · ${fmt.int(n.free_slots)} free slots`),
        slotsRow(n.capacity),
      ),
      h(
        "div",
        null,
        h("div", { class: "k muted small", style: { marginBottom: "6px" } }, `Loaded models (${loaded.length})`),
        loaded.length
          ? h("div", { class: "chips" }, loaded.map((m) => h("span", { class: "chip" }, m.name, h("span", { class: "muted" }, fmt.gb(m.size_gb)), n.pinned.includes(m.name) && badge("pinned", "accent", "plain"))))
          : h("span", { class: "muted small" }, n.status === "online" ? "nothing loaded" : "—"),
      ),
      speedsBlock(n),
      n.mlx_servers.length > 0 &&
        h(
          "div",
          null,
          h("div", { class: "k muted small", style: { marginBottom: "6px" } }, "MLX servers"),
          h("div", { class: "chips" }, n.mlx_servers.map((s) => h("span", { class: "chip" }, s.model.split("/").pop(), badge(s.status, s.status === "healthy" ? "ok" : s.status === "starting" || s.status === "loading" ? "info" : "warn", "plain")))),
        ),
      h("div", { class: "muted small" }, `Last seen ${fmt.ago(n.last_seen)}${n.agent_version ? ` · agent ${n.agent_version}` : ""}`),
    ),
  );
}

const HOLDS = { ollama: "Ollama", huggingface: "Hugging Face" };

/** Free disk where the node's models go, one meter per volume (an older agent's `disk` alone, where it sends no volumes). */
function diskRows(n) {
  const volumes = n.disk_volumes ?? (n.disk ? [{ ...n.disk, holds: [] }] : []);
  return volumes
    .filter((v) => v.total_gb > 0)
    .map((v) => {
      const holds = v.holds.map((x) => HOLDS[x] ?? x).join(" + ");
      return [
        h("span", { class: "k" }, "Disk"),
        h("div", { title: v.path ?? "" }, meter(1 - v.available_gb / v.total_gb, `${fmt.gb(v.available_gb)} free${holds ? ` · ${holds}` : ""}`)),
      ];
    });
}

const THERMAL_TONE = { nominal: "ok", fair: "info", serious: "warn", critical: "crit" };

/** macOS's thermal state as the agent read it, or "unknown" and why; nothing from an agent that never said. */
function thermalRow(thermal) {
  if (!thermal) return null;
  const value = thermal.state === "unknown" ? h("span", { class: "muted small" }, `unknown: ${thermal.reason}`) : badge(thermal.state, THERMAL_TONE[thermal.state]);
  return [h("span", { class: "k" }, "Thermal"), h("span", { "data-thermal": thermal.state }, value)];
}

/** Which config (by hash) and herd version the node's agent runs: flagged when either is not the router's. */
function runsBadge(n) {
  if (!n.config_hash && !n.agent_version) return null;
  const drift = [n.config_drift && "config", n.version_drift && "version"].filter(Boolean);
  const title = `agent ${n.agent_version ?? "?"}, config ${n.config_hash ?? "?"}: ${drift.length ? `${drift.join(" and ")} not the router's` : "the router's"}`;
  return h("span", { class: `badge ${drift.length ? "warn" : "plain"} mono`, title, "data-runs": drift.length ? "drift" : "same" }, drift.length ? `${drift.join(" + ")} drift` : (n.config_hash ?? n.agent_version).slice(0, 7));
}

/** How each source of /fleet/status `capacity.sources.parallel` reads on the card, and what it means. */
const SLOTS_SOURCE = {
  config: ["declared", "nodes[].parallel in the config"],
  learned: ["learned", "learned from the node's answers: how many ran at once without waiting inside it"],
  prior: ["Ollama's default", "the default of the node's Ollama release (OLLAMA_NUM_PARALLEL unset) until its answers show otherwise"],
};

/** The requests the node runs at once per loaded model, and where that figure came from. */
function slotsRow(c) {
  const [word, title] = SLOTS_SOURCE[c.sources.parallel];
  return [h("span", { class: "k" }, "Slots"), h("span", { class: "num small", title, "data-slots": c.sources.parallel }, `${fmt.int(c.parallel)} per model (${word})`)];
}

/** What herd learned of the node's speed (/fleet/status `capacity` and `speeds`): per model, and its factor for the rest. */
function speedsBlock(n) {
  const rows = Object.entries(n.speeds ?? {}).map(([model, s]) => ({ model, ...s }));
  const c = n.capacity;
  const basis = c && (c.sources.decode === "predicted" ? "learned" : n.hardware?.memory_bandwidth_gbps ? "from its hardware" : "a guess");
  // The unit in the heading, not in every cell: the table fits the card (a model's name wraps).
  return h(
    "div",
    { class: "speeds", "data-speeds": "" },
    h("div", { class: "k muted small", style: { marginBottom: "6px" } }, "Speeds (tokens/s)", c && h("span", { title: "decode rate × model size: the effective memory bandwidth" }, ` · ${fmt.num(c.decode_gb_per_s, 0)} GB/s effective (${basis})`)),
    rows.length
      ? table(
          [
            { label: "Model", value: (r) => h("span", { class: "mono" }, r.model) },
            { label: "Decode", value: (r) => fmt.num(r.decode_tps), right: true },
            { label: "Prefill", value: (r) => fmt.num(r.prefill_tps, 0), right: true },
            { label: "Load", value: (r) => fmt.ms(r.load_ms), right: true },
          ],
          rows,
        )
      : h("span", { class: "muted small" }, "nothing learned yet: each answer teaches it"),
  );
}

function drawQueues(list) {
  list.sort((a, b) => a.node_id.localeCompare(b.node_id) || a.model.localeCompare(b.model));
  mount(
    queues,
    table(
      [
        { label: "Node", value: (q) => q.node_id },
        { label: "Model", value: (q) => h("span", { class: "mono" }, q.model) },
        { label: "Queued", value: (q) => fmt.int(q.pending), right: true },
        { label: "In flight", value: (q) => fmt.int(q.in_flight), right: true },
        { label: "Concurrency", value: (q) => fmt.int(q.concurrency), right: true },
        { label: "Completed", value: (q) => fmt.int(q.completed), right: true },
        { label: "Failed", value: (q) => (q.failed ? badge(fmt.int(q.failed), "crit", "plain") : "0"), right: true },
        { label: "Avg latency", value: (q) => fmt.ms(q.avg_latency_ms), right: true },
      ],
      list,
      "No queues yet: one appears when the first request for a model reaches a node.",
    ),
  );
}

function drawTraces(list) {
  mount(
    traces,
    table(
      [
        { label: "When", value: (t) => h("span", { class: "muted" }, fmt.ago(t.timestamp)) },
        { label: "Model", value: (t) => h("span", { class: "mono" }, t.model) },
        { label: "Node", value: (t) => t.node_id ?? "—" },
        { label: "Status", value: (t) => badge(t.status, t.status === "completed" ? "ok" : "crit") },
        { label: "Latency", value: (t) => fmt.ms(t.latency_ms), right: true },
        { label: "First token", value: (t) => fmt.ms(t.time_to_first_token_ms), right: true },
        { label: "Tokens in / out", value: (t) => `${fmt.int(t.prompt_tokens)} / ${fmt.int(t.completion_tokens)}`, right: true },
        { label: "Tags", value: (t) => (t.tags.length ? h("div", { class: "chips" }, t.tags.map((tag) => h("span", { class: "chip" }, tag))) : h("span", { class: "muted" }, "—")) },
      ],
      list,
      "No traces yet: requests through herd show up here.",
    ),
  );
}
