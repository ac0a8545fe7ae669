// OTLP export (telemetry.otlp) through a real router process: a stand-in collector on loopback takes the OTLP/HTTP
// JSON posts, and the spans of each request (their names, parents, attributes) and the metrics arrive there; with no
// telemetry.otlp, nothing is ever sent to it.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, herd, startRouterProcess, tmpDir } from "./helpers.ts";

interface Received {
  path: string;
  headers: Headers;
  body: any;
}

/** A collector that keeps what it is sent, and answers `answer.status` (a 500 is a collector that fails). */
function startCollector() {
  const received: Received[] = [];
  const answer = { status: 200 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      received.push({ path: new URL(req.url).pathname, headers: req.headers, body: await req.json() });
      return Response.json({}, { status: answer.status });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, received, answer, stop: () => server.stop(true) };
}

const collectors: ReturnType<typeof startCollector>[] = [];
const sims: SimNode[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.stop()));
  for (const c of collectors) c.stop();
});

/** A router over two simulated nodes with `telemetry` (COLLECTOR: the collector's URL) and `more` of the config. */
async function routerWith(telemetry: string, more = "") {
  const collector = startCollector();
  collectors.push(collector);
  const nodes = await Promise.all([
    startSimOllama({ id: "bad", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] }),
    startSimOllama({ id: "good", models: ["llama3.2:3b"], loaded: [] }),
  ]);
  sims.push(...nodes);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  const entries = nodes.map((n) => JSON.stringify({ id: n.id, ollama: n.url }));
  const configure = (telemetry: string) =>
    writeFileSync(
      file,
      `export default { nodes: [${entries.join(", ")}], heartbeat: { intervalMs: 30000, timeoutMs: 60000, offlineMs: 120000 }, telemetry: ${telemetry.replace("COLLECTOR", collector.url)}, ${more} };\n`,
    );
  configure(telemetry);
  const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], {
    env: { OTLP_TEST_KEY: "s3cret-value" },
  });
  await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 3000, "all nodes online");
  return { router, collector, nodes, configure };
}

const chat = (url: string) =>
  fetch(`${url}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "llama3.2:3b", messages: [{ role: "user", content: "hi" }], stream: true }) });

/** The spans received, flat, with their attributes as a plain object. */
function spansIn(received: Received[]) {
  return received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => r.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ ...s, resource: rs.resource })))))
    .map((s: any) => ({ ...s, attrs: Object.fromEntries(s.attributes.map((a: any) => [a.key, Object.values(a.value)[0]])) }));
}

describe("telemetry.otlp", () => {
  test("each request's spans (admit, route, each attempt, relay) and the metrics reach the collector", async () => {
    const { router, collector, nodes } = await routerWith(
      `{ otlp: { endpoint: "COLLECTOR", headers: { "x-api-key": { env: "OTLP_TEST_KEY" } }, serviceName: "herd-test", intervalMs: 200 } }`,
    );
    nodes[0]!.setFaults({ error500: true });
    const res = await chat(router.url);
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get("x-fleet-retries")).toBe("1");

    const spans = await eventually(async () => {
      const all = spansIn(collector.received);
      return all.some((s) => s.name === "herd.relay") && all;
    }, 5000, "the request's spans");
    const root = spans.find((s) => s.name === "herd.request")!;
    expect(root.parentSpanId ?? "").toBe("");
    expect(root.attrs).toMatchObject({ "herd.status": "completed", "gen_ai.request.model": "llama3.2:3b", "gen_ai.response.model": "llama3.2:3b", "herd.node": "good", "herd.surface": "ollama", "herd.retries": 1 });
    expect(Number(root.attrs["gen_ai.usage.output_tokens"])).toBeGreaterThan(0);
    expect(root.kind).toBe(2); // SERVER; an attempt is a CLIENT's call
    expect(root.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "herd-test" } });
    const children = spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name);
    expect(children.sort()).toEqual(["herd.admit", "herd.relay", "herd.route"]);
    const routeSpan = spans.find((s) => s.name === "herd.route")!;
    const attempts = spans.filter((s) => s.name === "herd.attempt").sort((a, b) => a.attrs["herd.retry"] - b.attrs["herd.retry"]);
    expect(attempts.every((a) => a.parentSpanId === routeSpan.spanId && a.traceId === root.traceId && a.kind === 3)).toBe(true);
    expect(attempts.map((a) => [a.attrs["herd.node"], a.attrs["herd.retry"], a.attrs["herd.outcome"]])).toEqual([
      ["bad", 0, "failed"],
      ["good", 1, "served"],
    ]);
    expect(attempts[0].status.code).toBe(2); // ERROR

    const metric = await eventually(async () => {
      const metrics = collector.received.filter((r) => r.path === "/v1/metrics").flatMap((r) => r.body.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics)));
      return metrics.find((m: any) => m.name === "herd.requests" && m.sum.dataPoints.some((p: any) => Number(p.asInt ?? p.asDouble) >= 1));
    }, 5000, "the herd.requests metric");
    const point = metric.sum.dataPoints.find((p: any) => p.attributes.some((a: any) => a.key === "node" && a.value.stringValue === "good"));
    expect(point).toBeDefined();
    // The configured header goes with every export, and its value never shows in what herd reports of its config.
    expect(collector.received.every((r) => r.headers.get("x-api-key") === "s3cret-value")).toBe(true);
    expect(router.output()).not.toContain("s3cret-value");
    const settings = JSON.stringify(await getJson(`${router.url}/dashboard/api/settings`));
    expect(settings).toContain("x-api-key");
    expect(settings).not.toContain("s3cret-value");
    await router.stop();
  }, 30000);

  test("a failing collector is counted in /metrics, logged when it starts failing and when it works again (not at each failure), and warned of by the otlp_export check", async () => {
    const { router, collector } = await routerWith(`{ otlp: { endpoint: "COLLECTOR", intervalMs: 100 } }`, `agents: { credentials: { primary: "metrics-reader-credential" } }`);
    const metrics = async () => (await fetch(`${router.url}/metrics`, { headers: { authorization: "Bearer metrics-reader-credential" } })).text();
    const figure = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
    const check = async () => (await getJson(`${router.url}/dashboard/api/health?refresh=1`)).checks.find((c: any) => c.id === "otlp_export");
    expect((await check()).severity).toBe("ok");
    collector.answer.status = 500;
    for (let i = 0; i < 3; i++) await (await chat(router.url)).text();
    const failing = await eventually(async () => {
      const text = await metrics();
      // Each request is its herd.request, admit, route, attempt and relay spans: lost with the export.
      const lost = figure(text, "herd_otlp_spans_dropped_total") >= 15;
      return lost && figure(text, 'herd_otlp_exports_failed_total\\{signal="traces"\\}') >= 1 && figure(text, 'herd_otlp_exports_failed_total\\{signal="metrics"\\}') >= 3 && text;
    }, 10_000, "the failed exports and their spans counted");
    expect(failing).toContain("# TYPE herd_otlp_exports_failed_total counter");
    const down = await check();
    expect(down.severity).toBe("warning");
    expect(down.finding).toContain("500");
    for (const signal of ["traces", "metrics"]) expect(router.output().match(new RegExp(`OTLP export of ${signal} to \\S+ fails`, "g"))).toHaveLength(1);

    collector.answer.status = 200;
    await eventually(async () => {
      await (await chat(router.url)).text();
      return /OTLP export of traces to \S+ works again/.test(router.output());
    }, 10_000, "the recovery logged");
    await eventually(async () => (await check()).severity === "ok", 5000, "the check ok again");
    for (const signal of ["traces", "metrics"]) {
      expect(router.output().match(new RegExp(`OTLP export of ${signal} to \\S+ fails`, "g"))).toHaveLength(1);
      expect(router.output().match(new RegExp(`OTLP export of ${signal} to \\S+ works again`, "g"))).toHaveLength(1);
    }
    await router.stop();
  }, 60_000);

  test("without telemetry.otlp nothing is sent", async () => {
    const { router, collector } = await routerWith(`{ localSummary: false }`);
    const res = await chat(router.url);
    expect(res.status).toBe(200);
    await res.text();
    await Bun.sleep(500);
    await router.stop();
    expect(collector.received).toEqual([]);
  }, 30000);

  test("a reload starts the export, and a later one stops it", async () => {
    const { router, collector, configure } = await routerWith(`{}`);
    configure(`{ otlp: { endpoint: "COLLECTOR", intervalMs: 100 } }`);
    await router.waitFor(/config reloaded/);
    // The exporter starts as the reload is applied: a request or two may come before it.
    await eventually(async () => {
      await (await chat(router.url)).text();
      return spansIn(collector.received).some((s) => s.name === "herd.request");
    }, 5000, "spans after the reload");
    configure(`{}`);
    await eventually(async () => (router.output().match(/config reloaded/g) ?? []).length >= 2, 5000, "the second reload");
    await Bun.sleep(300); // the old export sends what it still holds
    const before = collector.received.length;
    await (await chat(router.url)).text();
    await Bun.sleep(500);
    expect(collector.received.length).toBe(before);
    await router.stop();
  }, 30000);

  test("a bad endpoint is refused at start, naming the field", async () => {
    const dir = tmpDir();
    const file = join(dir, "herd.config.ts");
    writeFileSync(file, `export default { telemetry: { otlp: { endpoint: "collector:4318" } } };\n`);
    const result = await herd(["check-config", file]);
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain("telemetry.otlp.endpoint");
  }, 30000);
});
