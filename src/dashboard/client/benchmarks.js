// Benchmarks: start a capacity run, follow its progress, cancel it, and compare
// stored runs over time (GET/POST /dashboard/api/benchmarks[/start|/progress|/cancel]).
import { actionButton, badge, chart, columns, fmt, getJson, h, meter, mount, notice, page, panel, postJson, start, stats, table } from "./herd.js";

const ACTIVE = ["pulling", "warming_up", "running"];
const STATUS_KIND = { idle: "", pulling: "info", warming_up: "info", running: "accent", complete: "ok", error: "crit", cancelled: "warn" };
const TYPES = [
  ["llm", "LLM"],
  ["vision", "Vision"],
  ["embed", "Embeddings"],
  ["image", "Image"],
];

const progressBox = h("div");
const runsBox = h("div");
let polling = false;

start(async () => {
  page(columns(panel("New run", {}, form()), panel("Progress", {}, progressBox)), runsBox);
  await Promise.all([drawRuns(), followProgress()]);
});

function form() {
  const mode = h("select", { "aria-label": "Mode" }, h("option", { value: "default" }, "Default: the models loaded now"), h("option", { value: "smart" }, "Smart: fill memory with recommended models first"));
  const duration = h("input", { type: "number", min: "10", max: "3600", step: "10", value: "300", "aria-label": "Duration in seconds", style: { width: "96px" } });
  const types = TYPES.map(([value, label]) => ({ value, box: h("input", { type: "checkbox", value, checked: value === "llm" }), label }));
  const status = h("div", { class: "status-line" });
  const run = actionButton("Start benchmark", "primary", async () => {
    const model_types = types.filter((t) => t.box.checked).map((t) => t.value);
    if (!model_types.length) return setStatus(status, "error", "Pick at least one model type.");
    try {
      const started = await postJson("/dashboard/api/benchmarks/start", { mode: mode.value, duration: Number(duration.value), model_types });
      setStatus(status, "ok", `Started ${started.run_id}.`);
      followProgress();
    } catch (e) {
      setStatus(status, "error", e.message);
    }
  });
  return h(
    "div",
    { class: "stack", style: { gap: "14px" } },
    h("div", { class: "kv", style: { gridTemplateColumns: "110px 1fr" } }, h("span", { class: "k" }, "Mode"), mode, h("span", { class: "k" }, "Duration"), h("span", { class: "row" }, duration, h("span", { class: "muted" }, "seconds")), h("span", { class: "k" }, "Model types"), h("span", { class: "row", style: { gap: "14px" } }, types.map((t) => h("label", { class: "check" }, t.box, t.label)))),
    h("div", { class: "row" }, run, status),
  );
}

function setStatus(el, kind, text) {
  el.className = `status-line ${kind}`;
  el.textContent = text;
}

// Polls every 2 s while a run is active, then refreshes the list of runs once.
async function followProgress() {
  if (polling) return;
  polling = true;
  try {
    for (;;) {
      const p = await getJson("/dashboard/api/benchmarks/progress");
      drawProgress(p);
      if (!ACTIVE.includes(p.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  } finally {
    polling = false;
  }
  await drawRuns();
}

function drawProgress(p) {
  if (p.status === "idle") return mount(progressBox, h("div", { class: "empty" }, h("strong", null, "No benchmark running."), "Start one to measure what the fleet can serve."));
  const active = ACTIVE.includes(p.status);
  const pull = p.pull_progress && p.pull_progress.model ? p.pull_progress : null;
  mount(
    progressBox,
    h(
      "div",
      { class: "stack", style: { gap: "12px" } },
      h("div", { class: "progress-head" }, h("div", { class: "row" }, badge(p.status.replace("_", " "), STATUS_KIND[p.status] ?? ""), h("span", null, p.phase ?? "")), active && actionButton("Cancel", "danger small", async () => {
        await postJson("/dashboard/api/benchmarks/cancel", {});
        await followProgress();
      })),
      meter(p.duration ? p.elapsed / p.duration : 0, `${fmt.int(p.elapsed)} / ${fmt.int(p.duration)} s`, "accent"),
      pull && meter((pull.pct ?? 0) / 100, `pulling ${pull.model} on ${pull.node_id}: ${fmt.pct(pull.pct)}`, "accent"),
      h(
        "div",
        { class: "kv" },
        h("span", { class: "k" }, "Requests"),
        h("span", { class: "num" }, `${fmt.int(p.requests_completed)} done · ${fmt.int(p.requests_failed)} failed`),
        h("span", { class: "k" }, "Throughput"),
        h("span", { class: "num" }, `${fmt.num(p.tok_per_sec)} tok/s`),
        h("span", { class: "k" }, "Models"),
        h("div", { class: "chips" }, (p.models ?? []).map((m) => h("span", { class: "chip mono" }, m))),
        p.models_pulled?.length > 0 && [h("span", { class: "k" }, "Pulled"), h("div", { class: "chips" }, p.models_pulled.map((m) => h("span", { class: "chip mono" }, m)))],
      ),
      p.error && notice("error", p.error),
    ),
  );
}

async function drawRuns() {
  const runs = (await getJson("/dashboard/api/benchmarks")).data ?? [];
  const ordered = [...runs].sort((a, b) => a.timestamp - b.timestamp);
  const x = ordered.map((r) => r.timestamp);
  const best = runs.reduce((b, r) => (!b || r.tokens_per_sec > b.tokens_per_sec ? r : b), null);
  mount(
    runsBox,
    h(
      "div",
      { class: "stack" },
      stats([
        { label: "Runs", value: fmt.int(runs.length), hint: runs.length ? `last ${fmt.ago(ordered.at(-1).timestamp)}` : "none yet" },
        { label: "Best throughput", value: best ? `${fmt.num(best.tokens_per_sec)} tok/s` : "—", hint: best?.run_id ?? "" },
        { label: "Best requests/s", value: runs.length ? fmt.num(Math.max(...runs.map((r) => r.requests_per_sec)), 2) : "—" },
      ]),
      runs.length > 1 &&
        columns(
          panel("Capacity over time", { subtitle: "tokens per second per run" }, chart({ x, series: [{ label: "Tokens/s", values: ordered.map((r) => r.tokens_per_sec), format: (v) => `${fmt.num(v)} tok/s` }] })),
          panel("Latency over time", {}, chart({ x, yFormat: fmt.ms, series: [{ label: "p50", values: ordered.map((r) => r.latency_p50_ms) }, { label: "p95", values: ordered.map((r) => r.latency_p95_ms) }, { label: "p99", values: ordered.map((r) => r.latency_p99_ms) }] })),
        ),
      panel(
        "Runs",
        { flush: true },
        table(
          [
            { label: "Run", value: (r) => h("span", { class: "mono" }, r.run_id) },
            { label: "When", value: (r) => fmt.time(r.timestamp) },
            { label: "Duration", value: (r) => `${fmt.int(r.duration_s)} s`, right: true },
            { label: "Requests", value: (r) => fmt.int(r.total_requests), right: true },
            { label: "Failures", value: (r) => (r.total_failures ? badge(fmt.int(r.total_failures), "crit", "plain") : "0"), right: true },
            { label: "Req/s", value: (r) => fmt.num(r.requests_per_sec, 2), right: true },
            { label: "Tok/s", value: (r) => fmt.num(r.tokens_per_sec), right: true },
            { label: "Latency p50 / p95 / p99", value: (r) => `${fmt.ms(r.latency_p50_ms)} / ${fmt.ms(r.latency_p95_ms)} / ${fmt.ms(r.latency_p99_ms)}`, right: true },
            { label: "First token p50 / p95", value: (r) => `${fmt.ms(r.ttft_p50_ms)} / ${fmt.ms(r.ttft_p95_ms)}`, right: true },
          ],
          [...ordered].reverse(),
          "No benchmark runs yet: start one above.",
        ),
      ),
    ),
  );
}
