// The dashboard's static files, embedded into the binary as text when it is
// compiled: no CDN, nothing read from disk at runtime.
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import apps from "./client/apps.js" with { type: "text" };
import benchmarks from "./client/benchmarks.js" with { type: "text" };
import favicon from "./client/favicon.svg" with { type: "text" };
import health from "./client/health.js" with { type: "text" };
import herd from "./client/herd.js" with { type: "text" };
import models from "./client/models.js" with { type: "text" };
import overview from "./client/overview.js" with { type: "text" };
import recommendations from "./client/recommendations.js" with { type: "text" };
import settings from "./client/settings.js" with { type: "text" };
import style from "./client/style.css" with { type: "text" };
import trends from "./client/trends.js" with { type: "text" };

export interface Asset {
  body: string;
  type: string;
  /** A strong validator, so browsers revalidate cheaply instead of caching a stale build. */
  etag: string;
}

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

function asset(body: string, type: string): Asset {
  return { body, type, etag: `"${Bun.hash(body).toString(36)}"` };
}

/** Served at /dashboard/assets/<name>. */
export const ASSETS: Record<string, Asset> = {
  "style.css": asset(style, CSS),
  "herd.js": asset(herd, JS),
  "uplot.js": asset(uplotJs, JS),
  "uplot.css": asset(uplotCss, CSS),
  "overview.js": asset(overview, JS),
  "trends.js": asset(trends, JS),
  "models.js": asset(models, JS),
  "apps.js": asset(apps, JS),
  "benchmarks.js": asset(benchmarks, JS),
  "health.js": asset(health, JS),
  "recommendations.js": asset(recommendations, JS),
  "settings.js": asset(settings, JS),
};

export const FAVICON = asset(favicon, "image/svg+xml");
