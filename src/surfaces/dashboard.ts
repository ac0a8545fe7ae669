// The dashboard: its pages and their assets (embedded in the binary), the live
// fleet stream the overview draws from, the favicons, and / leading a browser to it all.
import { Elysia } from "elysia";
import { type RouteFacts, routeFacts } from "../auth/route-facts.ts";
import { ASSETS, type Asset, FAVICON } from "../dashboard/assets.ts";
import { PAGES, pageHtml } from "../dashboard/pages.ts";
import { type FleetState, fleetStatus } from "../fleet/status.ts";
import { log } from "../log.ts";
import { jsonError } from "../core/wire-errors.ts";
import { sse } from "./sse.ts";

const SNAPSHOT_EVERY_MS = 2000;
/** The pages and their assets are static shells, open to anyone: the data they show comes from routes that need a key. */
const PAGE: RouteFacts = { access: "open", body: "json", errors: "herd" };

/** Both spellings: Content-Security-Policy's frame-ancestors for browsers of today, X-Frame-Options for older ones. */
const NO_FRAMING = { "content-security-policy": "frame-ancestors 'none'", "x-frame-options": "DENY" };

export function dashboardSurface(rt: FleetState) {
  const feed = new LiveFeed(rt);
  const app = new Elysia({ name: "dashboard" })
    .use(routeFacts)
    .get("/", ({ request }) => root(request), { facts: PAGE })
    .get("/favicon.svg", ({ request }) => serve(FAVICON, request), { facts: PAGE })
    // Seed 000: a redirect to the one icon there is.
    .get("/favicon.ico", () => new Response(null, { status: 301, headers: { location: "/favicon.svg" } }), { facts: PAGE })
    .get("/dashboard/assets/:name", ({ params, request }) => {
      const asset = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined;
      return asset ? serve(asset, request) : jsonError(404, `no dashboard asset "${params.name}"; one of: ${Object.keys(ASSETS).join(", ")}`);
    }, { facts: PAGE })
    .get("/dashboard/events", ({ request }) => liveStream(feed, request), { facts: { access: "client", body: "json", errors: "herd" } });
  for (const page of PAGES) {
    const html = pageHtml(page);
    // No other site may frame a page of herd (a click on its Pull or Settings could be steered there).
    app.get(page.path, () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...NO_FRAMING } }), { facts: PAGE });
  }
  return app;
}

/**
 * A browser (it asks for HTML) is sent to the dashboard; anyone else is answered as Ollama answers "/" (server/routes.go,
 * v0.32.15), which scripts and health probes check for. HEAD takes the GET answer, without the body.
 */
function root(request: Request): Response {
  const vary = { vary: "accept" };
  if (request.headers.get("accept")?.includes("text/html")) return new Response(null, { status: 302, headers: { location: "/dashboard", ...vary } });
  return new Response("Ollama is running", { headers: { "content-type": "text/plain; charset=utf-8", ...vary } });
}

function serve(asset: Asset, request: Request): Response {
  const headers = { "content-type": asset.type, etag: asset.etag, "cache-control": "no-cache" };
  if (request.headers.get("if-none-match") === asset.etag) return new Response(null, { status: 304, headers });
  return new Response(asset.body, { headers });
}

/**
 * The fleet as /fleet/status sees it, every SNAPSHOT_EVERY_MS, for every open live stream: built and encoded once
 * per tick however many dashboards watch, and not at all when none does.
 */
class LiveFeed {
  private readonly streams = new Set<(bytes: Uint8Array) => void>();
  private timer: Timer | null = null;

  constructor(private readonly rt: FleetState) {}

  /** `send` gets a snapshot now and one every tick until the returned function is called. */
  subscribe(send: (bytes: Uint8Array) => void): () => void {
    this.streams.add(send);
    log.debug(`dashboard: live stream opened (${this.streams.size} open)`);
    send(this.snapshot());
    this.timer ??= setInterval(() => {
      const bytes = this.snapshot();
      for (const stream of this.streams) stream(bytes);
    }, SNAPSHOT_EVERY_MS);
    return () => {
      if (!this.streams.delete(send)) return;
      log.debug(`dashboard: live stream closed (${this.streams.size} open)`);
      if (this.streams.size || !this.timer) return;
      clearInterval(this.timer);
      this.timer = null;
    };
  }

  private snapshot(): Uint8Array {
    const { nodes, queues, timestamp } = fleetStatus(this.rt.registry, this.rt.queues, this.rt.pins, this.rt.speeds, this.rt.live.status());
    return utf8.encode(sse({ nodes, queues, timestamp }));
  }
}

const utf8 = new TextEncoder();

/** GET /dashboard/events: the live feed, until the client goes. */
function liveStream(feed: LiveFeed, request: Request): Response {
  let stop = () => {};
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      // retry: a browser whose router restarts reconnects at the snapshot pace, not its 3 s default.
      controller.enqueue(utf8.encode(`retry: ${SNAPSHOT_EVERY_MS}\n\n`));
      stop = feed.subscribe((bytes) => {
        try {
          controller.enqueue(bytes);
        } catch {
          stop(); // the stream closed under us: the client is gone
        }
      });
      request.signal.addEventListener("abort", () => stop(), { once: true });
    },
    cancel: () => stop(),
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}
