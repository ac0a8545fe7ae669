// Settings: the runtime toggles (GET/POST /dashboard/api/settings), the live
// config file and its last reload (GET /fleet/status), the configuration by
// category, and the nodes with their versions.
import { SEVERITY_KIND, badge, columns, fmt, getJson, h, notice, page, panel, postJson, start, stats, table, toggle } from "./herd.js";

const TOGGLES = {
  auto_pull: ["Auto-pull", "When a request names a model no node has, pull it onto the best node and serve the request."],
  vram_fallback: ["Memory fallback", "When a model fits on no node, answer with a smaller loaded model of the same kind instead of failing."],
};

start(async () => {
  const [settings, status] = await Promise.all([getJson("/dashboard/api/settings"), getJson("/fleet/status")]);
  const { toggles = {}, ...categories } = settings.config;
  const config = status.config;
  page(
    stats([
      { label: "Router", value: `v${settings.router_version}`, hint: settings.router_hostname },
      { label: "Nodes", value: fmt.int(settings.nodes.length), hint: `${settings.nodes.filter((n) => n.status === "online").length} online` },
      { label: "Config", value: h("span", { class: "mono", style: { fontSize: "18px" } }, config.hash.slice(0, 12)), hint: `loaded ${fmt.ago(config.loaded_at)}` },
      { label: "Reloads", value: fmt.int(config.reloads), hint: config.last_error ? "the last one failed" : "all applied" },
    ]),
    columns(
      panel(
        "Runtime toggles",
        { subtitle: "apply now, until the router restarts" },
        h("div", { style: { margin: "-16px" } }, Object.entries(toggles).map(([key, on]) => setting(key, on))),
      ),
      panel("Live config", {}, liveConfig(config)),
    ),
    panel("Configuration", { subtitle: "read-only here: edit the config file, herd reloads it on save" }, h("div", { class: "masonry" }, Object.entries(categories).map(([name, values]) => category(name, values)))),
    panel(
      "Nodes",
      { flush: true },
      table(
        [
          { label: "Node", value: (n) => h("span", { class: "row" }, n.node_id, n.is_router && badge("router", "accent", "plain")) },
          { label: "Status", value: (n) => badge(n.status, SEVERITY_KIND[n.status] ?? "") },
          { label: "Agent version", value: (n) => (n.agent_version ? h("span", { class: "mono" }, n.agent_version, n.version_drift && badge("not the router's", "warn", "plain")) : h("span", { class: "muted" }, "no agent")) },
          { label: "Config", value: (n) => (n.config_hash ? h("span", { class: "mono" }, n.config_hash, n.config_drift && badge("not the router's", "warn", "plain")) : h("span", { class: "muted" }, "—")) },
          { label: "Address", value: (n) => h("span", { class: "mono" }, n.ip ?? "—") },
          { label: "Models loaded", value: (n) => fmt.int(n.models_loaded_count), right: true },
        ],
        settings.nodes,
        "No nodes yet: declare them in the config file.",
      ),
    ),
  );
});

function setting(key, on) {
  const [name, about] = TOGGLES[key] ?? [key, ""];
  const state = h("span", { class: "status-line" });
  const control = toggle(on, name, async (next) => {
    const res = await postJson("/dashboard/api/settings", { [key]: next });
    state.className = "status-line ok";
    state.textContent = `${next ? "on" : "off"} until restart`;
    return res;
  });
  return h("div", { class: "setting", "data-setting": key }, h("div", { class: "setting-text" }, h("div", { class: "setting-name" }, name, " ", h("code", { class: "muted" }, key)), h("div", { class: "muted small" }, about), state), control);
}

function liveConfig(config) {
  return h(
    "div",
    { class: "stack", style: { gap: "12px" } },
    h(
      "div",
      { class: "kv", style: { gridTemplateColumns: "110px 1fr" } },
      h("span", { class: "k" }, "File"),
      h("span", { class: "mono" }, config.path ?? "none (defaults)"),
      h("span", { class: "k" }, "Hash"),
      h("span", { class: "mono" }, config.hash),
      h("span", { class: "k" }, "Loaded"),
      h("span", null, `${fmt.time(config.loaded_at)} (${fmt.ago(config.loaded_at)})`),
      h("span", { class: "k" }, "Reloads"),
      h("span", null, fmt.int(config.reloads)),
    ),
    config.last_error
      ? notice("error", `Last reload failed ${fmt.ago(config.last_error.at)}, still running the previous config: ${config.last_error.message}`)
      : config.path
        ? notice("ok", "Running what the file says: every reload applied.")
        : notice("info", "No config file: herd runs on its defaults (`herd init` writes one)."),
  );
}

function category(name, values) {
  const rows = Object.entries(values ?? {});
  return h(
    "div",
    { class: "config-group" },
    h("h3", null, name.replaceAll("_", " ")),
    rows.length ? rows.map(([key, value]) => h("div", { class: "config-row" }, h("span", { class: "mono muted" }, key), show(value))) : h("div", { class: "config-row muted" }, "nothing set"),
  );
}

function show(value) {
  if (typeof value === "boolean") return badge(value ? "on" : "off", value ? "ok" : "", "plain");
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  if (typeof value === "object") return h("span", { class: "mono" }, JSON.stringify(value));
  return h("span", { class: "mono" }, String(value));
}
