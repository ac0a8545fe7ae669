// The platform connection and the daily usage roll-up (docs/platform.md) through a
// real router, against a stand-in platform on loopback that records everything it
// is sent: the error codes of connect, the key pair kept in a 0600 file across
// restarts and disconnects, and exactly the whitelisted fields leaving the node.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { STORE_FILE, openStore } from "../src/store/db.ts";
import { type Trace, TraceWriter } from "../src/store/traces.ts";
import { VERSION } from "../src/version.ts";
import { cleanupFile, eventually, getJson, onCleanup, startRouterProcess, tmpDir } from "./helpers.ts";

afterAll(cleanupFile);

interface Received {
  path: string;
  body: any;
  headers: Headers;
}

/**
 * A platform that answers registrations and roll-ups with the statuses it is told, and keeps what it got. `registered`
 * replaces its registration answer; `redirects` sends a request for a path on to another platform's same path (a 307,
 * which keeps the method and body); `refusal` is the text of its refusals.
 */
function standIn() {
  const received: Received[] = [];
  const answers: { register: number; summary: number; registered?: string; redirects: Record<string, string>; refusal?: string } = { register: 200, summary: 200, redirects: {} };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      received.push({ path, body: await req.json(), headers: req.headers });
      const elsewhere = answers.redirects[path];
      if (elsewhere) return new Response(null, { status: 307, headers: { location: `${elsewhere}${path}` } });
      if (path === "/api/nodes/register") {
        if (answers.register !== 200) return new Response(answers.refusal ?? JSON.stringify({ error: "nope" }), { status: answers.register, headers: { "content-type": "application/json" } });
        if (answers.registered !== undefined) return new Response(answers.registered, { headers: { "content-type": "application/json" } });
        return Response.json({ node_id: "node-uuid-1", user_email: "op@example.com", user_display_name: "Op" });
      }
      if (path === "/api/telemetry/local-summary") return Response.json({ ok: answers.summary < 300 }, { status: answers.summary });
      return new Response("not found", { status: 404 });
    },
  });
  onCleanup({ run: () => server.stop(true) });
  const url = `http://127.0.0.1:${server.port}`;
  return { url, received, answers, of: (path: string) => received.filter((r) => r.path === path) };
}

type Platform = ReturnType<typeof standIn>;

/** A router without nodes whose platform is `platform`; `dataDir` kept across restarts; the roll-up due `sendAtMs` after 00:00 UTC. */
async function router(platform: Platform, telemetry = "", dataDir = join(tmpDir(), "data"), more = "", sendAtMs = 0) {
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  writeFileSync(file, `export default { platform: { url: "${platform.url}" }, telemetry: { ${telemetry} }, ${more} };\n`);
  const r = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir], {
    env: { HERD_TELEMETRY_SEND_AT_MS: String(sendAtMs) },
  });
  return { ...r, dataDir };
}

const post = (url: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
const connect = (url: string, body: unknown = { operator_token: "herd_good" }) => post(url, "/api/platform/connect", body);
const status = (url: string) => getJson(`${url}/api/platform/status`);
const mode = (file: string) => statSync(file).mode & 0o777;

describe("the platform connection", () => {
  test("not connected by default: the configured platform, no features, nothing sent", async () => {
    const platform = standIn();
    const { url } = await router(platform);
    expect(await status(url)).toEqual({
      state: "not_connected",
      platform_url: platform.url,
      connected: null,
      features: { telemetry_local_summary: false, telemetry_include_tags: false, p2p_serve: false },
      error: null,
    });
    expect(platform.received).toEqual([]);
  });

  test("a platform.json that is not JSON: the status says so (not a 500), connect is an internal_error, disconnect still answers 200, the file is kept, nothing is sent", async () => {
    const platform = standIn();
    const dataDir = join(tmpDir(), "data");
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, "platform.json"), "{ not json");
    const { url } = await router(platform, "localSummary: true", dataDir);
    const shown = await status(url);
    expect(shown.state).toBe("not_connected");
    expect(shown.error).toContain("platform.json in the data dir cannot be read");
    // Connecting cannot keep a key pair it cannot read: seed 000's internal_error, and the file is not replaced.
    const refused = await connect(url);
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([500, "internal_error"]);
    expect((await post(url, "/api/platform/disconnect")).status).toBe(200);
    expect(readFileSync(join(dataDir, "platform.json"), "utf8")).toBe("{ not json");
    expect(platform.received).toEqual([]);
  });

  test("admin routes: with an admin token set, neither the status nor a connect without it", async () => {
    const platform = standIn();
    const { url } = await router(platform, "", undefined, `auth: { adminToken: "admin-secret-1234567890" }`);
    expect((await fetch(`${url}/api/platform/status`)).status).toBe(401);
    expect((await connect(url)).status).toBe(401);
    expect((await post(url, "/api/platform/disconnect")).status).toBe(401);
    const res = await fetch(`${url}/api/platform/status`, { headers: { authorization: "Bearer admin-secret-1234567890" } });
    expect([res.status, ((await res.json()) as { state: string }).state]).toEqual([200, "not_connected"]);
    expect(platform.received).toEqual([]);
  });

  test("connect's errors: a token not starting with herd_, one the platform rejects, a 5xx, no platform, a refused registration", async () => {
    const platform = standIn();
    const { url } = await router(platform);
    const refused = async (body: unknown) => {
      const res = await connect(url, body);
      return [res.status, ((await res.json()) as { code: string }).code];
    };
    expect(await refused({ operator_token: "sk-nope" })).toEqual([400, "invalid_token"]);
    expect(await refused({})).toEqual([400, "invalid_token"]);
    expect(platform.received).toEqual([]); // a bad token never leaves the machine
    platform.answers.register = 401;
    expect(await refused({ operator_token: "herd_revoked" })).toEqual([400, "invalid_token"]);
    platform.answers.register = 500;
    expect(await refused({ operator_token: "herd_good" })).toEqual([502, "platform_unreachable"]);
    platform.answers.register = 422;
    expect(await refused({ operator_token: "herd_good" })).toEqual([400, "registration_failed"]);
    const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const closed = `http://127.0.0.1:${gone.port}`;
    gone.stop(true);
    expect(await refused({ operator_token: "herd_good", platform_url: closed })).toEqual([502, "platform_unreachable"]);
    // Seed 000's four codes only: a request that cannot become a registration (a field of the wrong shape, a body that
    // is not JSON) is a registration_failed, a refusal not about the token; invalid_token is the token's alone.
    expect(await refused({ operator_token: "herd_good", platform_url: "ftp://x" })).toEqual([400, "registration_failed"]);
    expect(await refused({ operator_token: "herd_good", region: 7 })).toEqual([400, "registration_failed"]);
    const notJson = await fetch(`${url}/api/platform/connect`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect([notJson.status, ((await notJson.json()) as { code: string }).code]).toEqual([400, "registration_failed"]);
    expect((await status(url)).state).toBe("not_connected");
  });

  test("connect follows no redirect: the operator token goes to platform_url alone, and the refusal says where it pointed", async () => {
    const platform = standIn();
    const elsewhere = standIn();
    platform.answers.redirects["/api/nodes/register"] = elsewhere.url;
    const { url } = await router(platform);
    const res = await connect(url);
    const body = (await res.json()) as { error: string; code: string };
    expect([res.status, body.code]).toEqual([400, "registration_failed"]);
    expect(body.error).toContain(`a redirect (307) to ${elsewhere.url}/api/nodes/register`);
    expect(elsewhere.received).toEqual([]);
    expect((await status(url)).state).toBe("not_connected");
  });

  test("the platform's answer is bounded: over 64 KiB, or a node_id that is no plain id, is refused; the names it gives are kept and shown without control characters, cut to 256", async () => {
    const platform = standIn();
    const { url, output } = await router(platform);
    const refused = async () => {
      const res = await connect(url);
      const body = (await res.json()) as { error: string; code: string };
      return [res.status, body.code, body.error];
    };
    platform.answers.registered = JSON.stringify({ node_id: "node-1", user_email: "op@example.com", user_display_name: "x".repeat(5 * 1024 * 1024) });
    expect(await refused()).toEqual([400, "registration_failed", "the platform's answer is over 64 KiB"]);
    const forging = "node-1\r\n2026-01-01T00:00:00Z INFO forged \u001b[31m";
    platform.answers.registered = JSON.stringify({ node_id: forging, user_email: "op@example.com" });
    expect(await refused()).toEqual([400, "registration_failed", `the platform's node_id: expected 1 to 128 letters, digits and . _ : - (got ${forging.length} characters)`]);
    platform.answers.registered = JSON.stringify({ node_id: "x".repeat(129) });
    expect((await refused())[0]).toBe(400);
    // Its refusal's own words are cut short and shown without control characters.
    platform.answers.register = 422;
    const said = `no\r\nINFO forged \u001b[2J${"z".repeat(10_000)}`;
    platform.answers.refusal = JSON.stringify({ error: said });
    const [, code, error] = await refused();
    expect(code).toBe("registration_failed");
    expect(error).toBe(`the platform refused the registration (422): ${said.replace(/[\r\n\u001b]+/g, " ").slice(0, 200)}…`);
    platform.answers.register = 200;
    platform.answers.refusal = undefined;

    const name = `Op\r\nINFO forged ${"y".repeat(1000)}`;
    platform.answers.registered = JSON.stringify({ node_id: "node-uuid-2", user_email: "op@example.com\u001b[2J", user_display_name: name });
    const ok = await connect(url);
    expect(ok.status).toBe(200);
    const shown = (await status(url)).connected;
    expect(shown).toMatchObject({ node_id: "node-uuid-2", user_email: "op@example.com [2J", user_display_name: `${name.replace(/[\r\n]+/g, " ").slice(0, 256)}…` });
    expect(output()).not.toContain("\u001b");
    expect(output().split("\n").filter((line) => /^(\S+ )?INFO forged/.test(line))).toEqual([]);
  });

  test("connected: only the token, the public key, a benchmark result and the node name are sent; the key pair is kept, 0600, across restarts and disconnects", async () => {
    const platform = standIn();
    const first = await router(platform);
    const res = await connect(first.url);
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body).toEqual({
      state: "connected", node_id: "node-uuid-1", user_email: "op@example.com", user_display_name: "Op", platform_url: platform.url,
      connected_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    const [registration] = platform.of("/api/nodes/register");
    expect(Object.keys(registration!.body).sort()).toEqual(["benchmark", "node_name", "operator_token", "public_key"]);
    expect(registration!.body).toMatchObject({ operator_token: "herd_good", node_name: hostname(), benchmark: null });
    const publicKey: string = registration!.body.public_key;
    expect(publicKey).toStartWith("-----BEGIN PUBLIC KEY-----");
    const stateFile = join(first.dataDir, "platform.json");
    expect(mode(stateFile)).toBe(0o600);
    expect(readFileSync(stateFile, "utf8")).toContain("PRIVATE KEY");
    expect((await status(first.url)).connected).toEqual({ user_email: "op@example.com", user_display_name: "Op", node_id: "node-uuid-1", connected_at: body.connected_at });
    await first.stop();

    const second = await router(platform, "", first.dataDir);
    expect((await status(second.url)).state).toBe("connected");
    for (let i = 0; i < 2; i++) {
      const off = await post(second.url, "/api/platform/disconnect");
      expect([off.status, await off.json()]).toEqual([200, { state: "not_connected" }]);
    }
    expect((await status(second.url)).state).toBe("not_connected");
    expect((await connect(second.url, { operator_token: "herd_good", node_name: "studio-1" })).status).toBe(200);
    const again = platform.of("/api/nodes/register").at(-1)!.body;
    expect(again.public_key).toBe(publicKey);
    expect(again.node_name).toBe("studio-1");
    expect(mode(stateFile)).toBe(0o600);
    expect(platform.of("/api/telemetry/local-summary")).toEqual([]); // connecting alone sends no usage
  });
});

const DAY_S = 86400;
const YESTERDAY = new Date(Date.now() - DAY_S * 1000).toISOString().slice(0, 10);
const START = Date.parse(`${YESTERDAY}T00:00:00Z`) / 1000;
const base: Omit<Trace, "request_id" | "timestamp"> = {
  model: "llama3.3:70b", original_model: "llama3.3:70b", node_id: "studio", backend: "ollama", kind: "chat", original_format: "openai", stream: true,
  status: "completed", score: 73, scores_breakdown: { model_thermal: 50 }, predicted_ms: null, prediction_breakdown: null, latency_ms: 100, time_to_first_token_ms: 20, queue_wait_ms: 0,
  prompt_tokens: 10, completion_tokens: 100, retry_count: 0, fallback_used: false, excluded_nodes: [], client_ip: "10.0.0.50",
  error_message: null, tags: [], resolution: null, adjustments: [],
};
const TRACES: Trace[] = [
  ...Array.from({ length: 20 }, (_, i): Trace => ({ ...base, request_id: `l${i}`, timestamp: START + 3600 + i, latency_ms: (i + 1) * 10, tags: i < 3 ? ["project:prod"] : [] })),
  { ...base, request_id: "q", timestamp: START + 7200, model: "qwen3:8b", original_model: "qwen3:8b", latency_ms: 300, prompt_tokens: 5, completion_tokens: 7, error_message: "secret words" },
  // Not local use: refused before any node took it.
  { ...base, request_id: "r", timestamp: START + 7300, node_id: null, backend: null, status: "rejected", latency_ms: null, prompt_tokens: null, completion_tokens: null },
  // Another day: today.
  { ...base, request_id: "t", timestamp: Date.now() / 1000 - 5 },
];

/** A data dir whose store holds yesterday's traces (`traces`), as a router that served them would have. */
async function dataDirWithHistory(traces = TRACES): Promise<string> {
  const dataDir = join(tmpDir(), "data");
  const db = openStore(dataDir);
  const writer = new TraceWriter(join(dataDir, STORE_FILE), () => true, () => ({ maxAgeDays: 0, maxMb: 0, maxTagsPerDay: 0 }));
  for (const trace of traces) writer.record(trace);
  await writer.close();
  db.close();
  return dataDir;
}

/** The first roll-up the platform gets. */
const rollUp = (platform: Platform) => eventually(async () => platform.of("/api/telemetry/local-summary")[0], 5000, "the roll-up");

const ENTRY_FIELDS = ["avg_latency_ms", "local_completion_tokens", "local_prompt_tokens", "local_requests", "model", "p2p_served_requests", "p2p_served_tokens", "p95_latency_ms"];

describe("the daily usage roll-up", () => {
  test("opt-in and connected: yesterday's per-model use, exactly the whitelisted fields, signed; sent once", async () => {
    const platform = standIn();
    const { url, dataDir, stop } = await router(platform, "localSummary: true", await dataDirWithHistory());
    await Bun.sleep(300);
    expect(platform.of("/api/telemetry/local-summary")).toEqual([]); // on, but not connected: nothing leaves
    expect((await connect(url)).status).toBe(200);
    const sent = await rollUp(platform);
    const summary = sent.body;
    expect(Object.keys(summary).sort()).toEqual(["agent_version", "day", "entries", "node_id"]);
    for (const entry of summary.entries) expect(Object.keys(entry).sort()).toEqual(ENTRY_FIELDS);
    expect(summary).toEqual({
      day: YESTERDAY, node_id: "node-uuid-1", agent_version: VERSION,
      entries: [
        { model: "llama3.3:70b", local_requests: 20, local_prompt_tokens: 200, local_completion_tokens: 2000, p2p_served_requests: 0, p2p_served_tokens: 0, avg_latency_ms: 105, p95_latency_ms: 190 },
        { model: "qwen3:8b", local_requests: 1, local_prompt_tokens: 5, local_completion_tokens: 7, p2p_served_requests: 0, p2p_served_tokens: 0, avg_latency_ms: 300, p95_latency_ms: 300 },
      ],
    });
    expect(sent.headers.get("x-herd-node-signature")).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const stateFile = join(dataDir, "telemetry_state.json");
    await eventually(async () => readFileSync(stateFile, "utf8"), 5000, "the state file");
    expect(JSON.parse(readFileSync(stateFile, "utf8"))).toEqual({ last_sent_day: YESTERDAY });
    expect(mode(stateFile)).toBe(0o600);
    await stop();
    // The day is remembered: a restart does not send it again.
    const again = await router(platform, "localSummary: true", dataDir);
    await Bun.sleep(500);
    expect((await status(again.url)).features.telemetry_local_summary).toBe(true);
    expect(platform.of("/api/telemetry/local-summary")).toHaveLength(1);
  });

  test("per-tag counts only with the second opt-in", async () => {
    const platform = standIn();
    const { url } = await router(platform, "localSummary: true, includeTags: true", await dataDirWithHistory());
    expect((await connect(url)).status).toBe(200);
    const sent = await rollUp(platform);
    for (const entry of sent.body.entries) expect(Object.keys(entry).sort()).toEqual([...ENTRY_FIELDS, "request_count_by_tag"].sort());
    expect(sent.body.entries.map((e: any) => e.request_count_by_tag)).toEqual([{ "project:prod": 3 }, {}]);
  });

  test("per-tag counts carry the clients' own tags only, never a user's or a key's, at most 50 per model, the rest summed as other", async () => {
    const tagged = Array.from({ length: 60 }, (_, i): Trace => ({
      ...base, request_id: `g${i}`, timestamp: START + 9000 + i,
      tags: [`app-${String(i).padStart(2, "0")}`, "user:alice@example.com", "user:3f2a9c1b-account-uuid", "key:full", ...(i < 5 ? ["project:prod"] : [])],
    }));
    const platform = standIn();
    const { url } = await router(platform, "localSummary: true, includeTags: true", await dataDirWithHistory(tagged));
    expect((await connect(url)).status).toBe(200);
    const byTag = (await rollUp(platform)).body.entries[0].request_count_by_tag;
    expect(Object.keys(byTag).filter((tag) => tag.startsWith("user:") || tag.startsWith("key:"))).toEqual([]);
    expect(JSON.stringify(byTag)).not.toContain("alice");
    expect(Object.keys(byTag)).toHaveLength(51);
    expect(byTag["project:prod"]).toBe(5);
    expect(byTag.other).toBe(11);
  });

  test("the roll-up follows no redirect: nothing goes to where it points, and the status says why it was not sent", async () => {
    const platform = standIn();
    const elsewhere = standIn();
    platform.answers.redirects["/api/telemetry/local-summary"] = elsewhere.url;
    const { url } = await router(platform, "localSummary: true", await dataDirWithHistory());
    expect((await connect(url)).status).toBe(200);
    const error = await eventually(async () => (await status(url)).error, 5000, "the failure in the status");
    expect(error).toContain(`a redirect (307) to ${elsewhere.url}/api/telemetry/local-summary`);
    expect(elsewhere.received).toEqual([]);
  });

  test("a 409 (the platform has the day) counts as sent; a 5xx is said in the status and tried again (here: after a restart)", async () => {
    const platform = standIn();
    platform.answers.summary = 500;
    const failing = await router(platform, "localSummary: true", await dataDirWithHistory());
    expect((await connect(failing.url)).status).toBe(200);
    await eventually(async () => (await status(failing.url)).error, 5000, "the failure in the status");
    expect((await status(failing.url)).error).toContain("500");
    expect(() => readFileSync(join(failing.dataDir, "telemetry_state.json"))).toThrow();
    await failing.stop();

    platform.answers.summary = 409;
    const restarted = await router(platform, "localSummary: true", failing.dataDir);
    await eventually(async () => platform.of("/api/telemetry/local-summary").length === 2, 5000, "the second try");
    const stateFile = join(failing.dataDir, "telemetry_state.json");
    await eventually(async () => readFileSync(stateFile, "utf8").includes(YESTERDAY), 5000, "the day recorded");
    expect((await status(restarted.url)).error).toBeNull();
  });

  test("before today's send time, nothing is sent", async () => {
    const platform = standIn();
    // Ten minutes from now in the UTC day (or its last ms): the day's roll-up is not due yet.
    const later = Math.min((Date.now() % (DAY_S * 1000)) + 10 * 60_000, DAY_S * 1000 - 1);
    const { url } = await router(platform, "localSummary: true", await dataDirWithHistory(), "", later);
    expect((await connect(url)).status).toBe(200);
    await Bun.sleep(500);
    expect(platform.received.map((r) => r.path)).toEqual(["/api/nodes/register"]);
  });

  test("connected but the feature off: no roll-up", async () => {
    const platform = standIn();
    const { url } = await router(platform, "", await dataDirWithHistory());
    expect((await connect(url)).status).toBe(200);
    await Bun.sleep(500);
    expect(platform.received.map((r) => r.path)).toEqual(["/api/nodes/register"]);
  });
});
