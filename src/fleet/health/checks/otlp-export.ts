// The OTLP export (telemetry.otlp) to a collector that is down or refuses it: routing goes on, but each
// request's spans and herd's metrics are lost for as long as it lasts, and nothing else would say so.
import { duration, fold, type HealthCheck, type Problem } from "../types.ts";

export const otlpExport: HealthCheck = {
  id: "otlp_export",
  name: "OTLP export",
  run({ config, otlpExports: { signals, droppedSpans }, now }) {
    if (!config.telemetry.otlp) return fold([], "no OTLP export is configured (telemetry.otlp)");
    const failedSinceStart = signals.traces.failed + signals.metrics.failed;
    const problems = Object.entries(signals).flatMap(([signal, s]): Problem[] =>
      s.failing
        ? [{
            severity: "warning",
            finding: `the OTLP export of ${signal} to ${s.failing.endpoint} fails, for ${duration(now - s.failing.since)} (${s.failing.error}): ${s.failed} export(s) failed since start${signal === "traces" ? `, ${droppedSpans} span(s) lost` : ""}`,
            recommendation: "start the collector at telemetry.otlp.endpoint, or fix the endpoint or its headers; herd sends again as soon as the collector takes it (what failed meanwhile is lost).",
            details: { signal, endpoint: s.failing.endpoint, error: s.failing.error, since: s.failing.since / 1000, failed: s.failed, dropped_spans: droppedSpans },
          }]
        : [],
    );
    return fold(problems, `the OTLP exports work (${failedSinceStart} failed and ${droppedSpans} span(s) lost since start)`);
  },
};
