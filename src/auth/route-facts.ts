// What a route says about itself where it is registered: who may call it, the
// body limit it takes, and the wire format of the refusals herd writes for it.
// A surface declares them with the `facts` option of each route:
//
//   new Elysia({ name: "pins" }).use(routeFacts)
//     .post("/fleet/pin", handler, { parse: "none", facts: { access: "admin", body: "json", errors: "herd" } })
//
// The guard, the body limits and the error handler read them from a RouteTable.
// A route that declares nothing stops the router from starting, and is refused
// were it ever asked for: never opened.
import { type DocumentDecoration, Elysia, type InternalRoute } from "elysia";

export type Access =
  /** Anyone: monitoring and the dashboard's static pages. */
  | "open"
  /** Node agents: the heartbeat checks its node credential itself, as it needs the node id. */
  | "node"
  /** A client key when auth.clients is set; anyone otherwise. */
  | "client"
  /** Changes to the fleet: auth.adminToken, or loopback when none is set. */
  | "admin"
  /** Pulling a model onto a node: the admin, or a client key with the "pull" permission. */
  | "pull"
  /** Routes that check credentials of their own: the agent fleet's (seed 004: lead and worker credentials). */
  | "own";

export type BodyClass =
  /** server.maxBodyMb: a JSON request, and the cap on any body sent to a route that reads none. */
  | "json"
  /** server.maxMediaBodyMb: an upload (audio for transcription). */
  | "media"
  /** 256 KiB, whatever the config says: a heartbeat is small, and anyone may send one. */
  | "heartbeat";

export type ErrorFormat =
  /** {"error": "..."} with the X-Fleet-* headers: Ollama's API, and herd's routes beside it under /api. */
  | "ollama"
  /** OpenAI's error object with the X-Fleet-* headers. */
  | "openai"
  /** Anthropic's error object with the X-Fleet-* headers. */
  | "anthropic"
  /** {"error": "..."}: herd's own routes. */
  | "herd";

export interface RouteFacts {
  access: Access;
  body: BodyClass;
  errors: ErrorFormat;
}

// Kept in the route's OpenAPI detail, as a specification extension ("x-" field): app.routes shows a route's
// detail (the cast: Elysia's type lists only OpenAPI's own fields).
const FIELD = "x-herd-facts";

/** Every surface uses it: it makes `facts` a typed option of the surface's routes. */
export const routeFacts = new Elysia({ name: "route-facts" }).macro({
  facts: (facts: RouteFacts) => ({ detail: { [FIELD]: facts } as DocumentDecoration }),
});

/** The facts of every route of an app, by method and route as registered. */
export class RouteTable {
  private readonly byRoute = new Map<string, RouteFacts>();

  /** Reads every route's declaration, once the app is composed: a route without one is an error, naming it. */
  read(routes: readonly InternalRoute[]): void {
    const silent = routes.filter((r) => !declared(r)).map((r) => `${r.method} ${r.path}`);
    if (silent.length) throw new Error(`routes without facts (access, body, errors: src/auth/route-facts.ts): ${silent.join(", ")}`);
    for (const r of routes) this.byRoute.set(`${r.method} ${r.path}`, declared(r)!);
  }

  /** The facts of `route` (Elysia's pattern, as registered; HEAD is answered by the GET route), or undefined: refuse it. */
  of(method: string, route: string): RouteFacts | undefined {
    return this.byRoute.get(`${method === "HEAD" ? "GET" : method} ${route}`);
  }
}

function declared(route: InternalRoute): RouteFacts | undefined {
  return (route.hooks.detail as Record<string, RouteFacts> | undefined)?.[FIELD];
}
