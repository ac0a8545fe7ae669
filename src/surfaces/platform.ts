// /api/platform/*: the node's opt-in connection to a coordination platform, in
// seed 000's shapes (docs/platform.md). All three are admin routes: connect and
// disconnect change what leaves the machine, and the status names the operator's
// e-mail and the platform's id for this node, which a client key has no need of.
import { withoutCredentials } from "../config/credentials/secrets.ts";
import { Elysia } from "elysia";
import { routeFacts } from "../auth/route-facts.ts";
import type { LiveConfig } from "../config/live.ts";
import { log } from "../log.ts";
import { CONNECT_ERRORS, type ConnectAsk, ConnectError, type ConnectErrorCode, type Platform, TOKEN_SHAPE } from "../platform/connection.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { readJsonObject } from "./body.ts";

interface PlatformSources {
  live: LiveConfig;
  platform: Platform;
  telemetry: Pick<Telemetry, "check" | "lastError">;
}

const FACTS = { access: "admin", body: "json", errors: "herd" } as const;

export function platformSurface(rt: PlatformSources) {
  return new Elysia({ name: "platform" })
    .use(routeFacts)
    .get("/api/platform/status", () => {
      const { telemetry } = rt.live.config;
      const connection = rt.platform.connection();
      return {
        state: connection ? "connected" : "not_connected",
        platform_url: withoutCredentials(connection?.platform_url ?? rt.live.config.platform.url),
        connected: connection && {
          user_email: connection.user_email,
          user_display_name: connection.user_display_name,
          node_id: connection.node_id,
          connected_at: connection.connected_at,
        },
        features: { telemetry_local_summary: telemetry.localSummary, telemetry_include_tags: telemetry.includeTags, p2p_serve: false },
        error: rt.platform.problem ?? (connection ? rt.telemetry.lastError : null),
      };
    }, { facts: FACTS })
    .post("/api/platform/connect", async ({ request }) => {
      const ask = connectAsk(await readJsonObject(request), rt.live.config.platform.url);
      if (ask instanceof Response) return ask;
      try {
        const c = await rt.platform.connect(ask);
        log.info(`connected to the platform at ${withoutCredentials(c.platform_url)} as node ${c.node_id}`);
        void rt.telemetry.check(); // a roll-up already due goes now, not at the next tick
        return { state: "connected", node_id: c.node_id, user_email: c.user_email, user_display_name: c.user_display_name, platform_url: withoutCredentials(c.platform_url), connected_at: c.connected_at };
      } catch (e) {
        if (e instanceof ConnectError) return refuse(e.code, e.message);
        log.error(`POST /api/platform/connect failed: ${(e as Error).message}`);
        return refuse("internal_error", "connecting failed unexpectedly; see the router's log");
      }
    }, { parse: "none", facts: FACTS })
    .post("/api/platform/disconnect", () => {
      rt.platform.disconnect();
      return { state: "not_connected" };
    }, { facts: FACTS });
}

function refuse(code: ConnectErrorCode, message: string): Response {
  return Response.json({ error: message, code }, { status: CONNECT_ERRORS[code] });
}

/**
 * The connect request, or its 400 naming what is wrong. Only operator_token is required. Seed 000 has four codes: a
 * token missing or not herd_'s is invalid_token; a body or another field that cannot make a registration is
 * registration_failed, its code for a refusal that is not about the token.
 */
function connectAsk(body: Record<string, unknown> | string, defaultUrl: string): ConnectAsk | Response {
  if (typeof body === "string") return refuse("registration_failed", `${body}, with operator_token`);
  const { operator_token, platform_url = defaultUrl, node_name, region } = body;
  if (typeof operator_token !== "string") return refuse("invalid_token", TOKEN_SHAPE);
  const badField = (field: string, expected: string) => refuse("registration_failed", `${field}: ${expected}`);
  if (typeof platform_url !== "string" || !/^https?:\/\//.test(platform_url) || !URL.canParse(platform_url)) return badField("platform_url", "expected an http(s) URL");
  if (node_name !== undefined && (typeof node_name !== "string" || !node_name.trim())) return badField("node_name", "expected a non-empty string");
  if (region !== undefined && typeof region !== "string") return badField("region", "expected a string");
  return { operator_token, platform_url, node_name: node_name?.trim(), region };
}
