// A web page the operator opens may send herd a request the browser calls "simple" (text/plain or a form,
// no preflight): on loopback, where admin routes need no token, that is a change made by the page. Every
// change (POST, PUT, PATCH, DELETE) that another site's page sent is refused, by what the browser itself
// says about it (Sec-Fetch-Site, else Origin against Host). Programs (SDKs, curl, agents) send neither.
// Admin and node routes also take JSON only, so a browser too old to say where a request comes from still
// cannot send one without a preflight, which herd never grants.
import type { RouteFacts } from "./route-facts.ts";

const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface Refused {
  status: 403 | 415;
  message: string;
}

/** Why a change `request` must be refused as coming from another site, or not being JSON; null when it may go on. */
export function crossSiteRefusal(request: Request, facts: RouteFacts): Refused | null {
  if (!CHANGES.has(request.method)) return null;
  const from = foreignSite(request.headers);
  if (from) return { status: 403, message: `refused: this request comes from another site's page (${from}); herd takes changes only from its own dashboard and from programs` };
  // Client routes keep any body type: Ollama's documented curl calls send a form type, transcription a multipart upload.
  if ((facts.access === "admin" || facts.access === "pull" || facts.access === "node") && sendsBody(request.headers) && !isJson(request.headers.get("content-type"))) {
    return { status: 415, message: "Content-Type: expected application/json for this route (curl: -H 'Content-Type: application/json')" };
  }
  return null;
}

/** The header that shows the request came from another site's page, as `name: value`, or null. */
function foreignSite(headers: Headers): string | null {
  const site = headers.get("sec-fetch-site");
  // same-site is another origin too: a page on another port of localhost.
  if (site !== null) return site === "same-origin" || site === "none" ? null : `Sec-Fetch-Site: ${site}`;
  const origin = headers.get("origin");
  if (origin === null) return null;
  const host = URL.canParse(origin) ? new URL(origin).host : null;
  return host !== null && host === headers.get("host") ? null : `Origin: ${origin}`;
}

function sendsBody(headers: Headers): boolean {
  return headers.has("transfer-encoding") || Number(headers.get("content-length") ?? 0) > 0;
}

function isJson(contentType: string | null): boolean {
  const type = contentType?.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || Boolean(type?.endsWith("+json"));
}
