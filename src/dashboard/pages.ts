// The dashboard's pages: one HTML shell (nav bar, theme, title) around a
// per-page script that fetches its JSON and draws the page in the browser.
import { VERSION } from "../version.ts";

export interface Page {
  path: string;
  /** The page's script in /dashboard/assets, without ".js". */
  script: string;
  nav: string;
  title: string;
  subtitle: string;
  /** Loads the chart library. */
  charts?: boolean;
}

export const PAGES: Page[] = [
  { path: "/dashboard", script: "overview", nav: "Fleet", title: "Fleet overview", subtitle: "Every node, what it holds and what it is doing, live." },
  { path: "/dashboard/trends", script: "trends", nav: "Trends", title: "Trends", subtitle: "Requests, latency and throughput per hour.", charts: true },
  { path: "/dashboard/models", script: "models", nav: "Models", title: "Models", subtitle: "Latency, throughput and usage per model.", charts: true },
  { path: "/dashboard/apps", script: "apps", nav: "Apps", title: "Apps", subtitle: "Requests per tag: who uses the fleet, how fast, how often it fails.", charts: true },
  { path: "/dashboard/benchmarks", script: "benchmarks", nav: "Benchmarks", title: "Benchmarks", subtitle: "Capacity runs: start one, watch it, compare over time.", charts: true },
  { path: "/dashboard/health", script: "health", nav: "Health", title: "Health", subtitle: "Automated checks of the fleet, with what to do about each finding." },
  { path: "/dashboard/recommendations", script: "recommendations", nav: "Recommendations", title: "Recommendations", subtitle: "The model mix each node should hold, and the models it holds now." },
  { path: "/dashboard/settings", script: "settings", nav: "Settings", title: "Settings", subtitle: "Runtime toggles, the live config and the nodes' versions." },
];

// Runs before the first paint so a dark-mode user never sees a white flash: the stored
// choice, else the system's. herd.js owns the toggle.
const THEME_BOOT = `<script>document.documentElement.dataset.theme=localStorage.getItem("herd-theme")||(matchMedia("(prefers-color-scheme: dark)").matches?"dark":"light")</script>`;

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export function pageHtml(page: Page): string {
  const nav = PAGES.map((p) => `<a href="${p.path}"${p === page ? ` aria-current="page"` : ""}>${escape(p.nav)}</a>`).join("");
  const charts = page.charts ? `<link rel="stylesheet" href="/dashboard/assets/uplot.css"><script src="/dashboard/assets/uplot.js"></script>` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(page.title)} · herd</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
${THEME_BOOT}
<link rel="stylesheet" href="/dashboard/assets/style.css">
${charts}
<script type="module" src="/dashboard/assets/${page.script}.js"></script>
</head>
<body>
<header class="topbar">
  <a class="brand" href="/dashboard"><img src="/favicon.svg" alt="" width="22" height="22"><span>herd</span></a>
  <nav>${nav}</nav>
  <span class="topbar-end">
    <span class="version">v${escape(VERSION)}</span>
    <button id="theme-toggle" class="icon-button" type="button" title="Switch between light and dark" aria-label="Switch between light and dark"></button>
  </span>
</header>
<main>
  <div class="page-head">
    <div><h1>${escape(page.title)}</h1><p class="subtitle">${escape(page.subtitle)}</p></div>
    <div id="page-actions" class="page-actions"></div>
  </div>
  <div id="page"><p class="loading">Loading…</p></div>
</main>
</body>
</html>
`;
}
