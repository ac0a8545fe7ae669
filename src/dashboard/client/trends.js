// Trends: requests per hour, average latency and generation speed over a
// window of hours, from GET /dashboard/api/trends.
import { actions, chart, columns, fmt, getJson, page, panel, segmented, start, stats, utcSeconds } from "./herd.js";

const HOUR = 3600;

start(async () => {
  const windows = segmented("hours", [[24, "24 h"], [72, "3 days"], [168, "7 days"], [720, "30 days"]], 72, draw);
  actions(windows.el);
  await draw(windows.value());
});

async function draw(hours) {
  const { data } = await getJson(`/dashboard/api/trends?hours=${hours}`);
  // A continuous hourly axis: a quiet hour is zero requests, not a line drawn across it.
  const now = Math.floor(Date.now() / 1000 / HOUR) * HOUR;
  const x = Array.from({ length: hours }, (_, i) => now - (hours - 1 - i) * HOUR);
  const byHour = new Map(data.map((row) => [utcSeconds(row.hour_bucket), row]));
  const rows = x.map((t) => byHour.get(t));
  const tokensPerSecond = (r) => (r && r.avg_latency_ms && r.avg_completion_tokens !== null ? r.avg_completion_tokens / (r.avg_latency_ms / 1000) : null);

  const total = data.reduce((n, r) => n + r.request_count, 0);
  const timed = data.filter((r) => r.avg_latency_ms !== null);
  const weighted = (f) => timed.reduce((s, r) => s + f(r) * r.request_count, 0) / Math.max(1, timed.reduce((n, r) => n + r.request_count, 0));
  const busiest = data.reduce((best, r) => (!best || r.request_count > best.request_count ? r : best), null);

  page(
    stats([
      { label: "Requests", value: fmt.int(total), hint: `in the last ${hours} h` },
      { label: "Avg latency", value: timed.length ? fmt.ms(weighted((r) => r.avg_latency_ms)) : "—", hint: "weighted by requests" },
      { label: "Avg speed", value: timed.length ? `${fmt.num(weighted((r) => tokensPerSecond(r) ?? 0))} tok/s` : "—", hint: "completion tokens ÷ latency" },
      { label: "Busiest hour", value: busiest ? fmt.int(busiest.request_count) : "—", hint: busiest ? fmt.time(utcSeconds(busiest.hour_bucket)) : "no requests yet" },
    ]),
    panel("Requests per hour", {}, chart({ x, series: [{ label: "Requests", values: rows.map((r) => r?.request_count ?? 0), bars: true, format: fmt.int }] })),
    columns(
      panel("Average latency", {}, chart({ x, yFormat: fmt.ms, series: [{ label: "Latency", values: rows.map((r) => r?.avg_latency_ms ?? null) }] })),
      panel("Generation speed", { subtitle: "tokens per second" }, chart({ x, series: [{ label: "Tokens/s", values: rows.map(tokensPerSecond), format: (v) => `${fmt.num(v)} tok/s` }] })),
    ),
  );
}
