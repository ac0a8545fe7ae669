// How the OTLP export (telemetry.otlp) is doing, since start: per signal, the exports the collector failed, and
// the spans lost (with a failed export, or never handed to one because the export queue was full), for /metrics
// and the otlp_export health check. A collector that is down fails every intervalMs: the log says when a signal's
// exports start failing and when they work again, not each failure.
import { log } from "../log.ts";
import { shortLine } from "./printable.ts";

export type Signal = "traces" | "metrics";

export interface SignalHealth {
  /** Exports the collector failed (refused, did not answer, or answered an error). */
  failed: number;
  /** Since when (ms epoch) exports fail, why, and to where; null while they work. */
  failing: { since: number; error: string; endpoint: string } | null;
}

export class ExportHealth {
  readonly signals: Record<Signal, SignalHealth> = { traces: { failed: 0, failing: null }, metrics: { failed: 0, failing: null } };
  /** Spans lost: in failed exports, or dropped before any because the export queue was full. */
  droppedSpans = 0;

  /** An export of `signal` to `endpoint` (shown without credentials) failed with `error`, taking `spans` with it. */
  failed(signal: Signal, endpoint: string, error: string, spans = 0): void {
    const s = this.signals[signal];
    s.failed++;
    this.droppedSpans += spans;
    if (s.failing) return;
    s.failing = { since: Date.now(), error: shortLine(error, 300), endpoint };
    log.warn(`OTLP export of ${signal} to ${endpoint} fails (${s.failing.error}); routing goes on, ${signal === "traces" ? "spans" : "metrics"} are lost until the collector takes them again (telemetry.otlp)`);
  }

  /** An export of `signal` worked. */
  worked(signal: Signal): void {
    const s = this.signals[signal];
    if (!s.failing) return;
    log.info(`OTLP export of ${signal} to ${s.failing.endpoint} works again`);
    s.failing = null;
  }

  /** A new export started (a reload changed telemetry.otlp): whether the old one's exports failed says nothing of it. */
  restarted(): void {
    for (const s of Object.values(this.signals)) s.failing = null;
  }

  /** Spans dropped before any export (the queue was full). */
  dropped(spans: number): void {
    this.droppedSpans += spans;
  }
}
