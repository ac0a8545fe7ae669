// Health: the fleet's automated checks (GET /dashboard/api/health), worst
// first, each with its finding and what to do about it.
import { SEVERITY_KIND, actionButton, actions, badge, empty, fmt, getJson, h, page, panel, start, stats } from "./herd.js";

const ORDER = { critical: 0, warning: 1, info: 2, ok: 3 };
const LABEL = { ok: "OK", info: "OK", warning: "Warning", critical: "Critical" };
const OVERALL = { critical: "Critical issues need attention", warning: "Warnings to look at", info: "Healthy, with notes", ok: "All checks pass" };

start(async () => {
  actions(actionButton("Refresh", "", () => draw(true)));
  await draw(false);
});

// The API caches its checks for 30 s ("cached" in the header says so); Refresh asks for a fresh run.
async function draw(refresh) {
  const health = await getJson(`/dashboard/api/health${refresh ? "?refresh=1" : ""}`);
  const { summary } = health;
  const checks = [...health.checks].sort((a, b) => ORDER[a.severity] - ORDER[b.severity] || a.name.localeCompare(b.name));
  const findings = checks.filter((c) => c.severity !== "ok");
  const passing = checks.filter((c) => c.severity === "ok");
  page(
    stats([
      { label: "Fleet health", value: h("span", { class: `tone-${SEVERITY_KIND[summary.status]}` }, LABEL[summary.status] ?? summary.status), hint: OVERALL[summary.status] ?? "" },
      { label: "Critical", value: h("span", { class: summary.critical ? "tone-crit" : null }, fmt.int(summary.critical)) },
      { label: "Warnings", value: h("span", { class: summary.warning ? "tone-warn" : null }, fmt.int(summary.warning)) },
      { label: "Info", value: fmt.int(summary.info) },
      { label: "Passing", value: fmt.int(summary.ok), hint: `checked ${fmt.ago(health.generated_at)}${health.cached ? " (cached)" : ""}` },
    ]),
    panel("Findings", { flush: true }, findings.length ? findings.map(check) : empty("Nothing to report.", "Every check passes.")),
    passing.length > 0 &&
      panel(
        "Passing",
        { subtitle: `${passing.length} check${passing.length === 1 ? "" : "s"}`, flush: true },
        h("div", { class: "passing" }, passing.map((c) => h("div", { "data-check": c.id }, h("div", null, h("div", { class: "check-name" }, c.name), h("div", { class: "muted small" }, c.finding))))),
      ),
  );
}

function check(c) {
  return h(
    "div",
    { class: "health-check", "data-check": c.id },
    h("div", null, badge(c.severity, SEVERITY_KIND[c.severity])),
    h(
      "div",
      null,
      h("div", { class: "check-name" }, c.name),
      h("div", { class: "check-finding" }, c.finding),
      c.severity !== "ok" && c.recommendation && h("div", { class: "check-fix" }, h("b", null, "What to do: "), c.recommendation),
      c.nodes?.length > 0 && h("div", { class: "chips", style: { marginTop: "8px" } }, c.nodes.map((n) => h("span", { class: "chip" }, n))),
    ),
  );
}
