import { expect, test } from "bun:test";
import { crossSiteRefusal } from "./cross-site.ts";
import type { RouteFacts } from "./route-facts.ts";

const ADMIN: RouteFacts = { access: "admin", body: "json", errors: "herd" };
const CLIENT: RouteFacts = { access: "client", body: "media", errors: "ollama" };

const request = (method: string, headers: Record<string, string>, body?: string) =>
  new Request("http://127.0.0.1:11435/dashboard/api/delete", {
    method,
    headers: { host: "127.0.0.1:11435", ...(body === undefined ? {} : { "content-length": String(body.length) }), ...headers },
    body,
  });
const status = (r: Request, facts = ADMIN) => crossSiteRefusal(r, facts)?.status ?? "ok";

test("a change another site's page sent is refused, by Sec-Fetch-Site, else by Origin against Host", () => {
  expect(status(request("POST", { "sec-fetch-site": "cross-site", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("DELETE", { "sec-fetch-site": "same-site" }))).toBe(403);
  expect(status(request("POST", { origin: "http://evil.example", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("POST", { origin: "http://127.0.0.1:3000", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("POST", { origin: "null", "content-type": "application/json" }, "{}"))).toBe(403);
  // Whatever the route: a client route too (auto-pull changes a node's disk).
  expect(status(request("POST", { origin: "http://evil.example" }, "x"), CLIENT)).toBe(403);
  expect(crossSiteRefusal(request("POST", { "sec-fetch-site": "cross-site" }), ADMIN)!.message).toContain("Sec-Fetch-Site: cross-site");
});

test("the dashboard's own calls and programs' (no Origin) go on; reads are never refused", () => {
  expect(status(request("POST", { "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:11435", "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("POST", { origin: "http://127.0.0.1:11435", "content-type": "application/json; charset=utf-8" }, "{}"))).toBe("ok");
  expect(status(request("POST", { "sec-fetch-site": "none", "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("POST", { "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("GET", { "sec-fetch-site": "cross-site" }))).toBe("ok");
});

test("admin and node routes take a JSON body only; client routes any (curl's form type, multipart uploads)", () => {
  expect(status(request("POST", { "content-type": "text/plain" }, "{}"))).toBe(415);
  expect(status(request("POST", {}, "{}"))).toBe(415); // fetch sends a string as text/plain
  expect(status(request("POST", {}))).toBe("ok"); // no body: POST …/benchmarks/cancel
  expect(status(request("POST", { "content-type": "application/x-www-form-urlencoded" }, "{}"), CLIENT)).toBe("ok");
  expect(status(request("POST", { "content-type": "multipart/form-data; boundary=x" }, "--x--"), CLIENT)).toBe("ok");
});
