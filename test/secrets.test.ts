// No secret of the config in any read API, log or trace. The secret fields are found by walking the config's
// schema (a field added tomorrow is covered), each is given a value of its own, and every GET route the app
// registers is read, with no credential, a client key and the admin token, after some traffic.
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildApp } from "../src/app.ts";
import { isSecretField } from "../src/config/credentials/secrets.ts";
import { parseConfig } from "../src/config/load.ts";
import { herdConfigSchema } from "../src/config/schema.ts";
import type { Runtime } from "../src/runtime.ts";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, startRouterProcess, tmpDir } from "./helpers.ts";

afterAll(cleanupFile);

type Node = { wrapped?: Node; entries?: Record<string, Node>; item?: Node; value?: Node };

/** Every secret field's path in the schema; "[]" is any item of a list, "*" any value of a record. */
function secretPaths(schema: Node, path: string[] = []): string[][] {
  if (isSecretField(schema)) return [path];
  let s = schema;
  while (s.wrapped) s = s.wrapped;
  if (s.entries) return Object.entries(s.entries).flatMap(([k, field]) => secretPaths(field, [...path, k]));
  if (s.item) return secretPaths(s.item, [...path, "[]"]);
  if (s.value) return secretPaths(s.value, [...path, "*"]);
  return [];
}

/** Sets `path` in `config` to `value`; a list or record on the way must already hold an entry. */
function place(config: Record<string, any>, path: string[], value: string): void {
  let at: any = config;
  for (const [i, key] of path.entries()) {
    const last = i === path.length - 1;
    const step = key === "[]" ? 0 : key === "*" ? Object.keys(at)[0] : key;
    if (step === undefined || (key === "[]" && !at.length)) throw new Error(`the base config needs an entry at ${path.slice(0, i).join(".")} to set ${path.join(".")}`);
    if (last) at[step] = value;
    else at = at[step] ??= {};
  }
}

/** The GET routes of the app, as registered (the app built over an inert runtime: only registration runs). */
function getRoutes(): string[] {
  const live = { config: parseConfig({}) };
  const inert: any = new Proxy(() => inert, { get: (_, key) => (key === "then" ? undefined : key === "live" ? live : inert), apply: () => inert });
  return buildApp(inert as Runtime)
    .routes.filter((r) => r.method === "GET")
    .map((r) => r.path.replace(/:[^/]+/g, "x").replace("*", "x"));
}

/** What a GET answers within a moment: a stream (SSE) is read for 400 ms. */
async function read(url: string, key: string | null): Promise<string> {
  const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = `${res.status} ${JSON.stringify([...res.headers])}`;
  const stop = setTimeout(() => reader.cancel().catch(() => {}), 400);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // cancelled: a stream
  }
  clearTimeout(stop);
  return text;
}

const PATHS = secretPaths(herdConfigSchema as unknown as Node);
// Config rules keep some secrets apart (anthropic.apiKey is refused beside auth.clients): two routers cover them all.
const WITH_CLIENTS = PATHS.filter((p) => p.join(".") !== "anthropic.apiKey");
const WITHOUT_CLIENTS = PATHS.filter((p) => p.join(".") !== "auth.clients.[].key");

test("the schema's secret fields are the ones this test knows to place", () => {
  expect(PATHS.map((p) => p.join("."))).toContain("agents.credentials.primary");
  expect(new Set([...WITH_CLIENTS, ...WITHOUT_CLIENTS]).size).toBe(PATHS.length);
});

for (const [name, paths] of [["with client keys", WITH_CLIENTS], ["without client keys", WITHOUT_CLIENTS]] as const) {
  test(`no secret field's value in any GET route, log or trace (${name})`, async () => {
    const sim: SimNode = await startSimOllama({ id: "n", models: ["llama3.2:3b"], loaded: ["llama3.2:3b"] });
    try {
      const config: Record<string, any> = {
        nodes: [{ id: "n", ollama: sim.url }],
        auth: { clients: paths.some((p) => p[1] === "clients") ? [{ name: "app" }] : [] },
        agents: { profiles: { worker: { command: "true" } } },
        heartbeat: { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 },
        // Exports go to a closed loopback port: a failed export must not show its header either.
        telemetry: { otlp: { endpoint: "http://127.0.0.1:9", headers: { "x-api-key": "" }, intervalMs: 100 } },
      };
      const sentinels = new Map<string, string>();
      for (const path of paths) {
        const value = `sentinel${sentinels.size}x${randomBytes(6).toString("hex")}`;
        place(config, path, value);
        sentinels.set(path.join("."), value);
      }
      // Addresses may carry a user:password@ too (a node's Ollama behind a proxy, a collector): never shown either.
      const credential = (field: string) => {
        const value = `urlpass${sentinels.size}x${randomBytes(6).toString("hex")}`;
        sentinels.set(`${field} (its user:password@)`, value);
        return `user:${value}@`;
      };
      config.nodes[0].ollama = sim.url.replace("://", `://${credential("nodes[0].ollama")}`);
      config.telemetry.otlp.endpoint = `http://${credential("telemetry.otlp.endpoint")}127.0.0.1:9`;
      config.platform = { url: `https://${credential("platform.url")}platform.invalid` };
      const dir = tmpDir();
      const file = join(dir, "herd.config.json");
      writeFileSync(file, JSON.stringify(config));
      const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
      const clientKey = sentinels.get("auth.clients.[].key") ?? null;
      const admin = sentinels.get("auth.adminToken")!;
      await eventually(async () => ((await (await fetch(`${router.url}/fleet/status`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any).nodes[0]?.status === "online", 3000, "n online");

      // Traffic for the traces and the logs: a good answer, an error, refusals, a heartbeat with its credential.
      const chat = (model: string, key: string | null) =>
        fetch(`${router.url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
          body: JSON.stringify({ model, stream: false, messages: [{ role: "user", content: "hi" }] }),
        });
      expect((await chat("llama3.2:3b", clientKey)).status).toBe(200);
      await chat("no-such-model", clientKey);
      for (const wrong of sentinels.values()) await chat("llama3.2:3b", `${wrong}-wrong`);
      await fetch(`${router.url}/heartbeat`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${sentinels.get("auth.nodeToken")}` },
        body: JSON.stringify({ node_id: "n" }),
      });
      if (sentinels.has("anthropic.apiKey")) {
        await fetch(`${router.url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": sentinels.get("anthropic.apiKey")! },
          body: JSON.stringify({ model: "llama3.2:3b", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
        });
      }

      // An edit the router refuses must not echo its values on the open /healthz or in the log.
      const refused = `refusedvalue${randomBytes(6).toString("hex")}`;
      sentinels.set("a refused edit's value", refused);
      writeFileSync(file, JSON.stringify({ ...config, server: { port: refused } }));
      await eventually(async () => ((await (await fetch(`${router.url}/healthz`)).json()) as any).config_error !== null, 3000, "the refused edit");

      const routes = getRoutes();
      expect(routes).toContain("/dashboard/api/settings");
      const leaks: string[] = [];
      for (const route of routes) {
        for (const key of [null, clientKey, admin]) {
          const text = await read(`${router.url}${route}`, key);
          for (const [path, value] of sentinels) if (text.includes(value)) leaks.push(`${path} in GET ${route} (${key === admin ? "admin" : key ? "client key" : "no key"})`);
        }
      }
      await router.stop();
      for (const [path, value] of sentinels) if (router.output().includes(value)) leaks.push(`${path} in the router's log`);
      expect(leaks).toEqual([]);
    } finally {
      await sim.stop();
    }
  }, 60_000);
}
