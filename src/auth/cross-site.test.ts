import { expect, test } from "bun:test";
import { crossSiteRefusal } from "./cross-site.ts";

const request = (method: string, headers: Record<string, string>, body?: string) =>
  new Request("http://127.0.0.1:11435/dashboard/api/delete", {
    method,
    headers: { host: "127.0.0.1:11435", ...(body === undefined ? {} : { "content-length": String(body.length) }), ...headers },
    body,
  });
const status = (r: Request) => crossSiteRefusal(r)?.status ?? "ok";

test("a change another site's page sent is refused, by Sec-Fetch-Site, else by Origin against Host", () => {
  expect(status(request("POST", { "sec-fetch-site": "cross-site", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("DELETE", { "sec-fetch-site": "same-site" }))).toBe(403);
  expect(status(request("POST", { origin: "http://evil.example", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("POST", { origin: "http://127.0.0.1:3000", "content-type": "application/json" }, "{}"))).toBe(403);
  expect(status(request("POST", { origin: "null", "content-type": "application/json" }, "{}"))).toBe(403);
  // Whatever the route and the body's type.
  expect(status(request("POST", { origin: "http://evil.example", "content-type": "text/plain" }, "x"))).toBe(403);
  expect(crossSiteRefusal(request("POST", { "sec-fetch-site": "cross-site" }))!.message).toContain("Sec-Fetch-Site: cross-site");
});

test("the dashboard's own calls and programs' (no Origin) go on; reads are never refused", () => {
  expect(status(request("POST", { "sec-fetch-site": "same-origin", origin: "http://127.0.0.1:11435", "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("POST", { origin: "http://127.0.0.1:11435", "content-type": "application/json; charset=utf-8" }, "{}"))).toBe("ok");
  expect(status(request("POST", { "sec-fetch-site": "none", "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("POST", { "content-type": "application/json" }, "{}"))).toBe("ok");
  expect(status(request("GET", { "sec-fetch-site": "cross-site" }))).toBe("ok");
});

test("a program's change goes whatever its body's type: curl -d sends a form type, fetch a string as text/plain, an upload multipart", () => {
  for (const type of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"]) expect(status(request("POST", { "content-type": type }, "{}"))).toBe("ok");
  expect(status(request("POST", {}, "{}"))).toBe("ok");
  expect(status(request("POST", {}))).toBe("ok"); // no body: POST …/benchmarks/cancel
});
