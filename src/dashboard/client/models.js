// Models: per-model usage, latency and speed over a window of days
// (GET /dashboard/api/models), and how much of each model's context window
// requests actually use (GET /dashboard/api/context-usage).
import { actions, badge, chart, columns, dayAxis, empty, fmt, getJson, h, mount, page, panel, pivot, segmented, share, start, stats, table } from "./herd.js";

start(async () => {
  const windows = segmented("days", [[1, "24 h"], [7, "7 days"], [30, "30 days"], [90, "90 days"]], 7, draw);
  actions(windows.el);
  await draw(windows.value());
});

const speed = (m) => (m.avg_latency_ms && m.total_requests ? m.total_completion_tokens / ((m.avg_latency_ms * m.total_requests) / 1000) : null);

async function draw(days) {
  const { daily, summary } = await getJson(`/dashboard/api/models?days=${days}`);
  const context = h("div", null, h("p", { class: "loading", style: { padding: "0 16px" } }, "Loading…"));
  const x = dayAxis(days);
  const top = summary.slice(0, 8).map((m) => m.model);
  const shown = daily.filter((d) => top.includes(d.model));
  const most = Math.max(0, ...summary.map((m) => m.total_requests));
  const requests = summary.reduce((n, m) => n + m.total_requests, 0);

  page(
    stats([
      { label: "Models used", value: fmt.int(summary.length), hint: `in the last ${days} d` },
      { label: "Requests", value: fmt.int(requests), hint: summary[0] ? `most: ${summary[0].model}` : "none yet" },
      { label: "Prompt tokens", value: fmt.compact(summary.reduce((n, m) => n + m.total_prompt_tokens, 0)) },
      { label: "Completion tokens", value: fmt.compact(summary.reduce((n, m) => n + m.total_completion_tokens, 0)) },
    ]),
    panel(
      "Per model",
      { flush: true },
      table(
        [
          { label: "Model", value: (m) => h("span", { class: "mono" }, m.model) },
          { label: "Requests", value: (m) => share(m.total_requests, most, fmt.int(m.total_requests)) },
          { label: "Avg latency", value: (m) => fmt.ms(m.avg_latency_ms), right: true },
          { label: "Speed", value: (m) => (speed(m) === null ? "—" : `${fmt.num(speed(m))} tok/s`), right: true },
          { label: "Prompt tokens", value: (m) => fmt.int(m.total_prompt_tokens), right: true },
          { label: "Completion tokens", value: (m) => fmt.int(m.total_completion_tokens), right: true },
        ],
        summary,
        "No traces yet: requests through herd show up here, per model.",
      ),
    ),
    days > 1 &&
      columns(
        panel("Requests per day", { subtitle: top.length < summary.length ? "top 8 models" : "" }, chart({ x, series: pivot(shown, x, (d) => d.model, (d) => d.request_count, 0) })),
        panel("Average latency per day", {}, chart({ x, yFormat: fmt.ms, series: pivot(shown, x, (d) => d.model, (d) => d.avg_latency_ms) })),
      ),
    panel("Context usage", { subtitle: "tokens requests use against the context each model is loaded with", flush: true }, context),
  );
  // Its own fetch: the rest of the page stands if the analysis fails.
  try {
    mount(context, contextTable((await getJson(`/dashboard/api/context-usage?days=${days}`)).models ?? []));
  } catch (e) {
    mount(context, empty("Context usage is not available.", e.message));
  }
}

function contextTable(models) {
  return table(
    [
      { label: "Model", value: (m) => h("span", { class: "mono" }, m.model) },
      { label: "Requests", value: (m) => fmt.int(m.request_count), right: true },
      { label: "Allocated", value: (m) => fmt.int(m.override_ctx ?? m.allocated_ctx), right: true },
      { label: "Prompt p50 / p95", value: (m) => `${fmt.int(m.prompt_tokens?.p50)} / ${fmt.int(m.prompt_tokens?.p95)}`, right: true },
      { label: "Total p99 / max", value: (m) => `${fmt.int(m.total_tokens?.p99)} / ${fmt.int(m.total_tokens?.max)}`, right: true },
      { label: "Used", value: (m) => fmt.pct(m.utilization_pct, 1), right: true },
      { label: "Recommended", value: (m) => fmt.int(m.recommended_ctx), right: true },
      { label: "Saving", value: (m) => (m.savings_pct > 0 ? badge(fmt.pct(m.savings_pct), m.savings_pct >= 50 ? "warn" : "info", "plain") : h("span", { class: "muted" }, "—")), right: true },
    ],
    models,
    "No context data yet: it comes from the prompt sizes of traced requests.",
  );
}
