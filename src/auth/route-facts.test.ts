import { expect, test } from "bun:test";
import { Elysia } from "elysia";
import { type RouteFacts, RouteTable, routeFacts } from "./route-facts.ts";

const facts: RouteFacts = { access: "admin", body: "json", errors: "herd" };

test("a table is read from the routes' own declarations: by method and pattern, HEAD as GET", () => {
  const app = new Elysia().use(new Elysia({ prefix: "/p" }).use(routeFacts).get("/a/:id", () => "a", { facts }).delete("/b/*", () => "b", { facts: { ...facts, access: "open" } }));
  const table = new RouteTable();
  table.read(app.routes);
  expect(table.of("GET", "/p/a/:id")).toEqual(facts);
  expect(table.of("HEAD", "/p/a/:id")).toEqual(facts);
  expect(table.of("DELETE", "/p/b/*")?.access).toBe("open");
  expect(table.of("POST", "/p/a/:id")).toBeUndefined();
});

test("a route that declares nothing is an error naming every such route, so the router does not start", () => {
  const app = new Elysia().use(routeFacts).get("/said", () => "", { facts }).get("/silent", () => "").post("/mute", () => "", { parse: "none" });
  expect(() => new RouteTable().read(app.routes)).toThrow("routes without facts (access, body, errors: src/auth/route-facts.ts): GET /silent, POST /mute");
});
