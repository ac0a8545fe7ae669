// Who may call which route: the table a guard reads. Routes are matched as
// registered (Elysia's route pattern), so a trailing slash or a query string
// cannot slip a request past its rule.
import { PAGES } from "../dashboard/pages.ts";
import type { Access } from "./route-facts.ts";

// The dashboard's pages are static shells: the data they show comes from routes that need a key.
const OPEN = new Set(["GET /healthz", "GET /", "GET /favicon.svg", "GET /favicon.ico", "GET /dashboard/assets/:name", ...PAGES.map((p) => `GET ${p.path}`)]);

const NODE = new Set(["POST /heartbeat"]);

// src/surfaces/agents.ts and mcp.ts: every caller there is a lead or a worker with its own credential.
const OWN = new Set([
  "GET /metrics",
  "GET /sessions",
  "GET /agents",
  "GET /members",
  "GET /profiles",
  "GET /member-credentials",
  "POST /members",
  "DELETE /members/:paneId",
  "POST /sessions/:id/message",
  "POST /sessions/:id/reply",
  "GET /sessions/:id/replies",
  "POST /sessions/:id/ask",
  "GET /sessions/:id/status",
  "GET /tasks/:ticket",
  "POST /mcp",
  "GET /mcp",
  "DELETE /mcp",
]);

const ADMIN = new Set([
  "POST /api/pull",
  "POST /fleet/pin",
  "DELETE /fleet/pin/*",
  "POST /dashboard/api/pull",
  "POST /dashboard/api/delete",
  "POST /dashboard/api/pinned-models",
  "POST /dashboard/api/settings",
  "POST /dashboard/api/benchmarks",
  "POST /dashboard/api/benchmarks/start",
  "POST /dashboard/api/benchmarks/cancel",
]);

export function accessOf(method: string, route: string): Access {
  const key = `${method === "HEAD" ? "GET" : method} ${route}`;
  if (ADMIN.has(key)) return "admin";
  if (NODE.has(key)) return "node";
  if (OWN.has(key)) return "own";
  if (OPEN.has(key)) return "open";
  return "client";
}
