// Recommendations: the model mix each node should hold, with a Pull button for
// what it lacks (GET /dashboard/api/recommendations, POST /dashboard/api/pull);
// and the models each node holds now, to pin or delete
// (GET /dashboard/api/model-management, /pinned-models, POST /pinned-models, /delete).
import { SEVERITY_KIND, actionButton, actions, badge, empty, flash, fmt, getJson, h, meter, mount, page, panel, postJson, section, start, stats, table, toggle } from "./herd.js";

const recommendationsBox = h("div", { id: "recommendations", class: "stack" });
const modelsBox = h("div", { id: "models", class: "stack" });

start(async () => {
  actions(actionButton("Re-analyse", "", () => drawRecommendations(true)));
  page(section("Recommended mix", "per node, from its memory, the last 24 h of requests and a catalog of benchmarked models", recommendationsBox), section("Models on each node", "what each node holds on disk: pin to keep it loaded, delete to free the disk", modelsBox));
  await Promise.all([drawRecommendations(false), drawModels()]);
});

async function drawRecommendations(refresh) {
  const r = await getJson(`/dashboard/api/recommendations${refresh ? "?refresh=1" : ""}`);
  const usage = r.usage ?? {};
  mount(
    recommendationsBox,
    stats([
      { label: "Fleet", value: `${fmt.int(r.nodes.length)} node${r.nodes.length === 1 ? "" : "s"}`, hint: r.fleet_summary },
      { label: "Requests (24 h)", value: fmt.int(usage.total_requests_24h), hint: topCategory(usage.category_breakdown) },
      {
        label: "Uncovered categories",
        value: r.uncovered_categories?.length ? h("div", { class: "chips" }, r.uncovered_categories.map((c) => badge(c, "warn", "plain"))) : badge("none", "ok"),
        hint: "kinds of request no recommended model serves",
      },
      { label: "Analysed", value: fmt.ago(r.generated_at), hint: "cached for 5 min" },
    ]),
    r.nodes.length ? r.nodes.map(nodeRecommendations) : panel(null, {}, empty("No nodes to recommend for.", "Nodes appear here once they are online and report their memory.")),
  );
}

function topCategory(breakdown) {
  const [top] = Object.entries(breakdown ?? {}).sort((a, b) => b[1] - a[1]);
  return top ? `mostly ${top[0]} (${fmt.int(top[1])})` : "no requests in the last 24 h";
}

function nodeRecommendations(n) {
  // Filling the usable memory is the plan, not a warning: the bar keeps one colour.
  const ram = n.usable_ram_gb
    ? h(
        "div",
        { class: "row", style: { minWidth: "320px", flex: "1", justifyContent: "flex-end" } },
        h("span", { class: "muted small" }, `${fmt.gb(n.total_recommended_ram_gb)} of ${fmt.gb(n.usable_ram_gb)} usable planned`),
        h("div", { style: { width: "160px" } }, meter(n.total_recommended_ram_gb / n.usable_ram_gb, undefined, "accent")),
      )
    : null;
  return panel(
    n.node_id,
    { subtitle: n.total_ram_gb ? `${fmt.gb(n.total_ram_gb)} RAM · ${fmt.gb(n.ram_headroom_gb)} headroom` : "memory not reported: run the herd agent on it", actions: ram, flush: true },
    table(
      [
        { label: "Model", value: (m) => h("div", null, h("div", null, m.display_name ?? m.model), h("div", { class: "mono muted small" }, m.model)) },
        { label: "Category", value: (m) => h("span", { class: "chip" }, m.category) },
        { label: "RAM", value: (m) => fmt.gb(m.ram_gb), right: true },
        { label: "Quality", value: (m) => fmt.num(m.quality_score, 0), right: true },
        { label: "Priority", value: (m) => badge(m.priority, SEVERITY_KIND[m.priority] ?? "", "plain") },
        { label: "Why", value: (m) => m.reason, wrap: true },
        { label: "", value: (m) => (m.already_available ? badge("on disk", "ok") : pullButton(n.node_id, m.model)), right: true },
      ],
      n.recommendations,
      n.total_ram_gb ? "Nothing to recommend for this node." : "No recommendations without its memory size.",
      (m) => ({ "data-node": n.node_id, "data-model": m.model }),
    ),
  );
}

// POST /dashboard/api/pull answers when the pull is over, which can take minutes: the button says so meanwhile.
function pullButton(nodeId, model) {
  const status = h("span", { class: "status-line" });
  const button = actionButton("Pull", "primary small", async () => {
    button.textContent = "Pulling…";
    status.className = "status-line";
    status.textContent = "";
    try {
      const res = await postJson("/dashboard/api/pull", { node_id: nodeId, model });
      if (res.ok === false) throw new Error(res.error ?? "the node refused the pull");
      button.replaceWith(badge("pulled", "ok"));
      await drawModels();
    } catch (e) {
      button.textContent = "Retry pull";
      status.className = "status-line error";
      status.textContent = e.message;
    }
  });
  return h("div", { class: "row", style: { justifyContent: "flex-end" } }, status, button);
}

async function drawModels() {
  const [{ nodes }, pins] = await Promise.all([getJson("/dashboard/api/model-management"), getJson("/dashboard/api/pinned-models")]);
  mount(modelsBox, nodes.length ? nodes.map((n) => nodeModels(n, pins)) : panel(null, {}, empty("No nodes report their models yet.")));
}

function nodeModels(n, pins) {
  const disk = n.disk_total_gb
    ? h("div", { class: "row", style: { minWidth: "320px", flex: "1", justifyContent: "flex-end" } }, h("span", { class: "muted small" }, `${fmt.gb(n.disk_available_gb)} free of ${fmt.gb(n.disk_total_gb)}`), h("div", { style: { width: "160px" } }, meter(1 - n.disk_available_gb / n.disk_total_gb)))
    : null;
  return panel(
    n.node_id,
    { subtitle: `${n.models.length} model${n.models.length === 1 ? "" : "s"} · ${fmt.gb(n.total_size_gb)} on disk`, actions: disk, flush: true },
    table(
      [
        { label: "Model", value: (m) => h("div", null, h("div", { class: "mono" }, m.name), m.display_name && m.display_name !== m.name && h("div", { class: "muted small" }, m.display_name)) },
        { label: "Category", value: (m) => (m.category ? h("span", { class: "chip" }, m.category) : h("span", { class: "muted" }, "—")) },
        { label: "Size", value: (m) => fmt.gb(m.size_gb), right: true },
        { label: "Params · quant", value: (m) => h("span", { class: "muted" }, [m.parameter_size, m.quantization].filter(Boolean).join(" · ") || "—") },
        { label: "Last used", value: (m) => fmt.ago(m.last_used), right: true },
        { label: "Requests", value: (m) => fmt.int(m.total_requests), right: true },
        { label: "State", value: (m) => h("div", { class: "chips" }, m.loaded_in_vram && badge("loaded", "ok"), m.unused && badge("unused", "")) },
        { label: "Pinned", value: (m) => pinSwitch(n.node_id, m.name, pins) },
        { label: "", value: (m) => deleteButton(n.node_id, m.name), right: true },
      ],
      n.models,
      "No models on this node.",
      (m) => ({ "data-node": n.node_id, "data-model": m.name }),
    ),
  );
}

function pinSwitch(nodeId, model, pins) {
  if (pins.env_pins.includes(model)) return h("span", { class: "row" }, toggle(true, `${model} is pinned on every node by the config`), h("span", { class: "muted small" }, "config"));
  const pinned = (pins.per_node[nodeId] ?? []).includes(model);
  return toggle(pinned, `Pin ${model} on ${nodeId}`, async (on) => {
    const res = await postJson("/dashboard/api/pinned-models", { node_id: nodeId, model, pinned: on });
    pins.per_node = res.per_node;
    if (res.note) flash("info", res.note);
  });
}

// Deleting frees the disk for good (the model must be pulled again to use it): a second click confirms.
function deleteButton(nodeId, model) {
  let armed = false;
  const button = actionButton("Delete", "danger small", async () => {
    if (!armed) {
      armed = true;
      button.textContent = "Confirm delete";
      button.classList.add("confirm");
      setTimeout(() => {
        armed = false;
        button.textContent = "Delete";
        button.classList.remove("confirm");
      }, 4000);
      return;
    }
    const res = await postJson("/dashboard/api/delete", { node_id: nodeId, model }).catch((e) => ({ ok: false, error: e.message }));
    if (res.ok === false) return flash("error", `Could not delete ${model} from ${nodeId}: ${res.error ?? "the node refused"}`);
    flash("ok", `Deleted ${model} from ${nodeId}.`);
    await drawModels();
  });
  return button;
}
