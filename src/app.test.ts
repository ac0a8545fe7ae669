// Every route of the app and what it declares (auth/route-facts.ts): who may call
// it, the body limit it takes, the wire format of its refusals. The table below is
// the contract: a route added, removed or changed in any of these shows up here,
// in review. A route that declares nothing is refused, never opened.
import { expect, test } from "bun:test";
import { buildApp } from "./app.ts";
import { idleSources } from "./app-fixtures.ts";
import { admitBody } from "./auth/limits.ts";
import { refusal } from "./auth/refusal.ts";
import { RouteTable } from "./auth/route-facts.ts";
import { ClientGate } from "./router/client-gate.ts";

const EXPECTED = `
GET /healthz open json herd
GET /fleet/status client json herd
GET /fleet/queue client json herd
GET /fleet/limits client json herd
POST /heartbeat node heartbeat herd
POST /fleet/pin admin json herd
DELETE /fleet/pin/* admin json herd
GET /dashboard/api/pinned-models client json herd
POST /dashboard/api/pinned-models admin json herd
GET / open json herd
GET /favicon.svg open json herd
GET /favicon.ico open json herd
GET /dashboard/assets/:name open json herd
GET /dashboard/events client json herd
GET /dashboard open json herd
GET /dashboard/trends open json herd
GET /dashboard/models open json herd
GET /dashboard/apps open json herd
GET /dashboard/benchmarks open json herd
GET /dashboard/health open json herd
GET /dashboard/recommendations open json herd
GET /dashboard/settings open json herd
GET /dashboard/api/traces client json herd
GET /dashboard/api/usage client json herd
GET /dashboard/api/overview client json herd
GET /dashboard/api/models client json herd
GET /dashboard/api/trends client json herd
GET /dashboard/api/apps client json herd
GET /dashboard/api/apps/daily client json herd
GET /dashboard/api/health client json herd
GET /dashboard/api/context-usage client json herd
GET /dashboard/api/settings client json herd
GET /fleet/config admin json herd
POST /dashboard/api/settings admin json herd
GET /dashboard/api/benchmarks client json herd
GET /dashboard/api/benchmarks/progress client json herd
POST /dashboard/api/benchmarks admin json herd
POST /dashboard/api/benchmarks/start admin json herd
POST /dashboard/api/benchmarks/cancel admin json herd
POST /api/chat client json ollama
POST /api/generate client json ollama
POST /api/embed client json ollama
POST /api/embeddings client json ollama
POST /api/show client json ollama
GET /api/version client json ollama
GET /api/tags client json ollama
GET /api/ps client json ollama
POST /v1/chat/completions client json openai
POST /v1/completions client json openai
POST /v1/embeddings client json openai
GET /v1/models client json openai
GET /v1/models/* client json openai
POST /v1/responses client json openai
POST /v1/messages client json anthropic
POST /v1/messages/count_tokens client json anthropic
GET /v1/messages client json anthropic
POST /api/pull pull json ollama
POST /api/generate-image client json ollama
POST /v1/images/generations client json openai
GET /api/image-models client json ollama
POST /api/transcribe client media ollama
GET /dashboard/api/recommendations client json herd
GET /dashboard/api/model-management client json herd
POST /dashboard/api/pull admin json herd
POST /dashboard/api/delete admin json herd
DELETE /api/delete admin json ollama
POST /api/copy admin json ollama
POST /api/create admin json ollama
POST /api/push admin json ollama
GET /metrics own json herd
GET /sessions own json herd
GET /agents own json herd
GET /members own json herd
GET /profiles own json herd
GET /member-credentials own json herd
POST /members own json herd
DELETE /members/:paneId own json herd
POST /sessions/:id/message own json herd
POST /sessions/:id/reply own json herd
GET /sessions/:id/replies own json herd
DELETE /sessions/:id/replies/:msgId own json herd
POST /sessions/:id/cancel own json herd
POST /sessions/:id/ask own json herd
GET /sessions/:id/status own json herd
GET /tasks/:ticket own json herd
POST /mcp own json herd
GET /mcp own json herd
DELETE /mcp own json herd
GET /api/platform/status admin json herd
POST /api/platform/connect admin json herd
POST /api/platform/disconnect admin json herd
`;

/** The app over idle sources with the default config (open mode). */
async function idleApp() {
  return buildApp(await idleSources());
}

// What a route declares, and what the body limits and the refusals make of it, read through them.
async function factsOf(table: RouteTable, method: string, path: string): Promise<string> {
  const facts = table.of(method, path)!; // read() has checked that every route declares them
  const huge = new Request("http://herd/", { method: "POST", headers: { "content-length": String(1e12) } });
  const limit = admitBody(huge, facts.body, { server: { maxBodyMb: 1, maxMediaBodyMb: 2 } } as never, "127.0.0.1", new ClientGate())!;
  const body = limit.includes("heartbeats") ? "heartbeat" : limit.includes("maxMediaBodyMb") ? "media" : "json";
  const refused = refusal(facts.errors, 401, "no");
  const shape: any = await refused.json();
  const errors = shape.type === "error" ? "anthropic" : typeof shape.error === "object" ? "openai" : refused.headers.has("x-fleet-node") ? "ollama" : "herd";
  return `${method} ${path} ${facts.access} ${body} ${errors}`;
}

test("every route declares its access level, body limit and error format, and they are the contract's", async () => {
  const { routes } = await idleApp();
  const table = new RouteTable();
  table.read(routes);
  const seen = await Promise.all(routes.map((r) => factsOf(table, r.method, r.path)));
  expect(seen).toEqual(EXPECTED.trim().split("\n"));
});

test("a route the app's table does not know is refused with a 403 in JSON, not opened to anyone", async () => {
  // Registered after the app read its routes' facts, so it has none. An unlisted route used to be a client route:
  // open to anyone on a herd without client keys, as this one is.
  const app = (await idleApp()).get("/late", () => "opened");
  const res = await app.handle(new Request("http://localhost/late"));
  expect(res.status).toBe(403);
  expect(await res.json()).toEqual({ error: "GET /late declares no access level, so herd refuses it" });
});
