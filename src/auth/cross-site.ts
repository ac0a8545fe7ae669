// A web page the operator opens may send herd a request the browser calls "simple" (text/plain or a form,
// no preflight): on loopback, where admin routes need no token, that is a change made by the page. Every
// change (POST, PUT, PATCH, DELETE) that another site's page sent is refused, by what the browser itself
// says about it: Sec-Fetch-Site, else Origin against Host, as Go 1.25's net/http CrossOriginProtection
// decides (pkg.go.dev/net/http#CrossOriginProtection). A request with neither is not a browser's (SDKs, curl,
// agents): any body type goes, as Ollama takes `curl -d '{…}'`'s form type.

const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface Refused {
  status: 403;
  message: string;
}

/** Why a change `request` must be refused as coming from another site's page; null when it may go on. */
export function crossSiteRefusal(request: Request): Refused | null {
  if (!CHANGES.has(request.method)) return null;
  const from = foreignSite(request.headers);
  return from ? { status: 403, message: `refused: this request comes from another site's page (${from}); herd takes changes only from its own dashboard and from programs` } : null;
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
