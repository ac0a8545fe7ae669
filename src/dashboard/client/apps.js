// Apps: requests grouped by tag (metadata.tags, user, X-Herd-Tags) with
// latency, tokens and error rate (GET /dashboard/api/apps), and their daily
// trend (GET /dashboard/api/apps/daily).
import { actions, badge, chart, columns, dayAxis, fmt, getJson, h, page, panel, pivot, segmented, share, start, stats, table } from "./herd.js";

start(async () => {
  const windows = segmented("days", [[1, "24 h"], [7, "7 days"], [30, "30 days"], [90, "90 days"]], 7, draw);
  actions(windows.el);
  await draw(windows.value());
});

const errorKind = (rate) => (rate >= 0.1 ? "crit" : rate >= 0.02 ? "warn" : "ok");

async function draw(days) {
  const [{ by_tag: tags }, { daily }] = await Promise.all([getJson(`/dashboard/api/apps?days=${days}`), getJson(`/dashboard/api/apps/daily?days=${days}`)]);
  const x = dayAxis(days);
  const top = tags.slice(0, 8).map((t) => t.tag);
  const shown = daily.filter((d) => top.includes(d.tag));
  const most = Math.max(0, ...tags.map((t) => t.request_count));
  const worst = tags.reduce((w, t) => (!w || t.error_rate > w.error_rate ? t : w), null);

  page(
    stats([
      { label: "Apps", value: fmt.int(tags.length), hint: `tags seen in the last ${days} d` },
      { label: "Tagged requests", value: fmt.int(tags.reduce((n, t) => n + t.request_count, 0)), hint: "a request with two tags counts under each" },
      { label: "Busiest", value: tags[0]?.tag ?? "—", hint: tags[0] ? `${fmt.int(tags[0].request_count)} requests` : "no tagged requests yet" },
      { label: "Highest error rate", value: worst ? fmt.rate(worst.error_rate) : "—", hint: worst?.tag ?? "" },
    ]),
    panel(
      "Per app",
      { flush: true },
      table(
        [
          { label: "Tag", value: (t) => h("span", { class: "chip" }, t.tag) },
          { label: "Requests", value: (t) => share(t.request_count, most, fmt.int(t.request_count)) },
          { label: "Avg latency", value: (t) => fmt.ms(t.avg_latency_ms), right: true },
          { label: "Avg first token", value: (t) => fmt.ms(t.avg_ttft_ms), right: true },
          { label: "Prompt tokens", value: (t) => fmt.int(t.total_prompt_tokens), right: true },
          { label: "Completion tokens", value: (t) => fmt.int(t.total_completion_tokens), right: true },
          { label: "Errors", value: (t) => badge(fmt.rate(t.error_rate), errorKind(t.error_rate), "plain"), right: true },
        ],
        tags,
        "No tagged requests yet: tag them with metadata.tags, the user field or an X-Herd-Tags header.",
      ),
    ),
    days > 1 &&
      columns(
        panel("Requests per day", {}, chart({ x, series: pivot(shown, x, (d) => d.tag, (d) => d.request_count, 0) })),
        panel("Tokens per day", {}, chart({ x, series: pivot(shown, x, (d) => d.tag, (d) => d.total_tokens, 0) })),
      ),
  );
}
