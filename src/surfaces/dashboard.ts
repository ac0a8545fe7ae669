// The dashboard: its pages and their assets (embedded in the binary), the live
// fleet stream the overview draws from, the favicons, and / leading to it all.
import { Elysia } from "elysia";
import { ASSETS, type Asset, FAVICON } from "../dashboard/assets.ts";
import { PAGES, pageHtml } from "../dashboard/pages.ts";
import { fleetStatus } from "../fleet/status.ts";
import { log } from "../log.ts";
import type { Runtime } from "../runtime.ts";
import { jsonError } from "./errors.ts";

const SNAPSHOT_EVERY_MS = 2000;

export function dashboardSurface(rt: Runtime) {
  const app = new Elysia({ name: "dashboard" })
    .get("/", () => new Response(null, { status: 302, headers: { location: "/dashboard" } }))
    .get("/favicon.svg", ({ request }) => serve(FAVICON, request))
    // Browsers that ask for /favicon.ico take the SVG when it says what it is.
    .get("/favicon.ico", ({ request }) => serve(FAVICON, request))
    .get("/dashboard/assets/:name", ({ params, request }) => {
      const asset = ASSETS[params.name];
      return asset ? serve(asset, request) : jsonError(404, `no dashboard asset "${params.name}"; one of: ${Object.keys(ASSETS).join(", ")}`);
    })
    .get("/dashboard/events", ({ request }) => liveStream(rt, request));
  for (const page of PAGES) {
    const html = pageHtml(page);
    app.get(page.path, () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } }));
  }
  return app;
}

function serve(asset: Asset, request: Request): Response {
  const headers = { "content-type": asset.type, etag: asset.etag, "cache-control": "no-cache" };
  if (request.headers.get("if-none-match") === asset.etag) return new Response(null, { status: 304, headers });
  return new Response(asset.body, { headers });
}

let openStreams = 0;

/** GET /dashboard/events: the fleet as /fleet/status sees it, now and every 2 s, until the client goes. */
function liveStream(rt: Runtime, request: Request): Response {
  const encoder = new TextEncoder();
  let timer: Timer | null = null;
  const stop = () => {
    if (!timer) return;
    clearInterval(timer);
    timer = null;
    openStreams--;
    log.debug(`dashboard: live stream closed (${openStreams} open)`);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = () => {
        const { nodes, queues, timestamp } = fleetStatus(rt.registry, rt.queues, rt.pins, rt.live.status());
        try {
          controller.enqueue(encoder.encode(`data: ${JSON.stringify({ nodes, queues, timestamp })}\n\n`));
        } catch {
          stop(); // the stream closed under us: the client is gone
        }
      };
      // retry: a browser whose router restarts reconnects at the snapshot pace, not its 3 s default.
      controller.enqueue(encoder.encode(`retry: ${SNAPSHOT_EVERY_MS}\n\n`));
      timer = setInterval(send, SNAPSHOT_EVERY_MS);
      openStreams++;
      log.debug(`dashboard: live stream opened (${openStreams} open)`);
      send();
      request.signal.addEventListener("abort", stop, { once: true });
    },
    cancel: stop,
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}
