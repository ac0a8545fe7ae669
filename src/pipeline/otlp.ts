// OTLP export (telemetry.otlp): each request's spans and herd's key figures, sent over OTLP/HTTP JSON to a
// collector. Loaded by the runtime only when configured (a dynamic import), so without it no OpenTelemetry code is
// ever evaluated: start-up, idle memory and the request path stay as they are.
import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { withoutCredentials } from "../config/credentials/secrets.ts";
import type { Config } from "../config/schema.ts";
import type { ExportHealth, Signal } from "../core/export-health.ts";
import type { Queues } from "../fleet/queues.ts";
import type { Registry } from "../fleet/registry.ts";
import type { TraceWriter } from "../store/traces.ts";
import { VERSION } from "../version.ts";
import { spansOf } from "./otlp-spans.ts";

export type OtlpConfig = NonNullable<Config["telemetry"]["otlp"]>;

/** What the export reads: the finished rows and the figures /metrics shows; and where it says how its exports go. */
export interface OtlpSources {
  traces: Pick<TraceWriter, "outcomes" | "watch" | "countedModel">;
  queues: Pick<Queues, "entries">;
  registry: Pick<Registry, "all">;
  exports: ExportHealth;
}

export interface OtlpExport {
  /** Sends what is still buffered, then stops. */
  stop(): Promise<void>;
}

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL };
/** The batch processor's queue (its default maxQueueSize): spans past it are dropped, so herd drops them first, and counts them. */
const MAX_QUEUED_SPANS = 2048;

/** What an OTLP exporter's export() is: a batch out, one result back (code 0 is @opentelemetry/core's ExportResultCode.SUCCESS). */
interface Exporter<T> {
  export(batch: T, done: (result: { code: number; error?: Error }) => void): void;
}

/** An export's error as the log and the health page say it: an OTLPExporterError carries the collector's HTTP status as its code. */
function failure(error: (Error & { code?: unknown }) | undefined): string {
  if (!error) return "the export failed";
  return typeof error.code === "number" ? `HTTP ${error.code} ${error.message}` : error.message;
}

/** Tells `settled` each of `exporter`'s results: whether it worked, its error, and the batch it was for. */
function counted<T>(exporter: Exporter<T>, settled: (ok: boolean, error: string, batch: T) => void): void {
  const send = exporter.export.bind(exporter);
  exporter.export = (batch, done) =>
    send(batch, (result) => {
      settled(result.code === 0, failure(result.error), batch);
      done(result);
    });
}

export function startOtlp(config: OtlpConfig, rt: OtlpSources): OtlpExport {
  const base = config.endpoint.replace(/\/+$/, "");
  const headers = Object.fromEntries(Object.entries(config.headers).map(([name, secret]) => [name, secret.value ?? ""]));
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: VERSION });
  const stops: (() => Promise<void>)[] = [];
  const shown = withoutCredentials(base);
  rt.exports.restarted();
  const tell = (signal: Signal, ok: boolean, error: string, spans = 0) => (ok ? rt.exports.worked(signal) : rt.exports.failed(signal, shown, error, spans));

  if (config.traces) {
    // Spans handed to the processor and not yet settled by an export: queued, or in an export under way.
    let outstanding = 0;
    const exporter = new OTLPTraceExporter({ url: `${base}/v1/traces`, headers });
    counted(exporter, (ok, error, spans) => {
      outstanding -= spans.length;
      tell("traces", ok, error, spans.length);
    });
    const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.intervalMs, maxQueueSize: MAX_QUEUED_SPANS });
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    const tracer = provider.getTracer("herd", VERSION);
    const unwatch = rt.traces.watch((rows) => {
      for (const row of rows) {
        const planned = spansOf(row);
        // A collector that is slow or gone fills the queue: past it a request's spans are dropped whole, and counted.
        if (outstanding + planned.length > MAX_QUEUED_SPANS) {
          rt.exports.dropped(planned.length);
          continue;
        }
        outstanding += planned.length;
        const made: Span[] = [];
        for (const p of planned) {
          const parent = p.parent === null ? context.active() : trace.setSpan(context.active(), made[p.parent]!);
          const span = tracer.startSpan(p.name, { kind: KINDS[p.kind], startTime: p.start, attributes: p.attributes, root: p.parent === null }, parent);
          if (p.error) span.setStatus({ code: SpanStatusCode.ERROR, message: p.error });
          made.push(span);
        }
        // Children end before their parent, as a request's stages end before it does.
        for (let i = made.length - 1; i >= 0; i--) made[i]!.end(planned[i]!.end);
      }
    });
    stops.push(async () => {
      unwatch();
      await provider.shutdown();
    });
  }

  if (config.metrics) {
    const exporter = new OTLPMetricExporter({ url: `${base}/v1/metrics`, headers });
    counted(exporter, (ok, error) => tell("metrics", ok, error));
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: config.intervalMs, exportTimeoutMillis: Math.min(config.intervalMs, 30_000) });
    const provider = new MeterProvider({ resource, readers: [reader] });
    const meter = provider.getMeter("herd", VERSION);
    meter.createObservableCounter("herd.requests", { description: "Requests routed, by outcome, model and node." }).addCallback((result) => {
      for (const r of rt.traces.outcomes.values()) result.observe(r.count, { status: r.status, model: r.model, node: r.node });
    });
    meter.createObservableGauge("herd.requests.in_flight", { description: "Requests running, by node and model." }).addCallback((result) => {
      for (const q of rt.queues.entries()) result.observe(q.in_flight, { node: q.node_id, model: q.model });
    });
    meter.createObservableGauge("herd.requests.queued", { description: "Requests waiting for a slot, by node and model." }).addCallback((result) => {
      for (const q of rt.queues.entries()) result.observe(q.pending, { node: q.node_id, model: q.model });
    });
    meter.createObservableGauge("herd.nodes", { description: "Nodes by status." }).addCallback((result) => {
      const counts = new Map<string, number>();
      for (const node of rt.registry.all()) counts.set(node.status, (counts.get(node.status) ?? 0) + 1);
      for (const [status, n] of counts) result.observe(n, { status });
    });
    const latency = meter.createHistogram("herd.request.duration", { description: "A request's whole time, by outcome, model and node.", unit: "ms" });
    const unwatch = rt.traces.watch((rows) => {
      for (const row of rows) if (row.latency_ms !== null) latency.record(row.latency_ms, { status: row.status, model: rt.traces.countedModel(row), node: row.node_id ?? "" });
    });
    stops.push(async () => {
      unwatch();
      await provider.shutdown();
    });
  }

  return {
    async stop() {
      await Promise.allSettled(stops.map((stop) => stop()));
    },
  };
}
