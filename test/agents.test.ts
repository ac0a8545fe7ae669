// The agent fleet over REST (seed 004), with the stand-in agent in real tmux
// panes: spawning, turns (reply, question and answer, transcript, timeouts,
// busy, async tickets, the inbox), identity and the Authz table, stopping and
// exits, /metrics and /healthz. Tests share one router and run in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { ARCHITECT, type Fleet, PRIMARY, startFleet, WORKERS_KEY } from "./agents-fleet.ts";
import { printed, runLine } from "./doc-commands.ts";
import { cleanupFile, eventually } from "./helpers.ts";

setDefaultTimeout(20_000);

let fleet: Fleet;
let sim: SimNode;
let w: string; // the worker most turn tests talk to
let wToken: string;

const call = (method: string, path: string, opts?: { token?: string | null; body?: unknown }) => fleet.call(method, path, opts);
const send = (id: string, body: Record<string, unknown>, token = PRIMARY) => call("POST", `/sessions/${id}/message`, { body, token });
const spawn = async (body: Record<string, unknown> = {}) => {
  const r = await call("POST", "/members", { body });
  expect(r.status).toBe(201);
  return r.body as { sessionId: string; paneId: string; cwd: string; worktree?: string; branch?: string };
};
const drain = async (id: string) => (await call("GET", `/sessions/${id}/replies`)).body.replies.map((r: any) => r.content);
const status = async (id: string) => (await call("GET", `/sessions/${id}/status`)).body;

afterAll(cleanupFile);

beforeAll(async () => {
  sim = await startSimOllama({ id: "a", models: ["llama3.2:3b"] });
  fleet = await startFleet({ nodes: `nodes: [{ id: "a", ollama: "${sim.url}" }],` });
  w = (await spawn()).sessionId;
  wToken = (await fleet.standIn(w)).env.HERD_TOKEN!;
});

afterAll(async () => {
  await fleet?.stop();
  await sim?.stop();
});

// The seed's table has 15 routes (its index says 14): herd serves all 15; /healthz is the open one.
const ROUTES: [string, string][] = [
  ["GET", "/metrics"],
  ["GET", "/sessions"],
  ["GET", "/agents"],
  ["GET", "/members"],
  ["GET", "/profiles"],
  ["GET", "/member-credentials"],
  ["POST", "/members"],
  ["DELETE", "/members/pane-999"],
  ["POST", "/sessions/w-none/message"],
  ["POST", "/sessions/w-none/reply"],
  ["GET", "/sessions/w-none/replies"],
  ["POST", "/sessions/w-none/ask"],
  ["GET", "/sessions/w-none/status"],
  ["GET", "/tasks/tk-none"],
];

describe("health, credentials and the Authz table", () => {
  test("/healthz is open and reports the pane backend: tmux, its version, the protocol and the fleet's socket", async () => {
    const r = await call("GET", "/healthz", { token: null });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("ok");
    expect(r.body.panes).toMatchObject({ backend: "tmux", protocol: 1, socket: fleet.socket });
    expect(r.body.panes.version).toMatch(/^tmux \d/);
  });

  test("every other route of the 15 answers 401 without a credential and with an unknown one", async () => {
    for (const [method, path] of ROUTES) {
      const none = await call(method, path, { token: null, body: method === "POST" ? {} : undefined });
      expect([method, path, none.status, none.body.error]).toEqual([method, path, 401, "unauthorized"]);
      const bad = await call(method, path, { token: "hw_not-a-credential" });
      expect([method, path, bad.status]).toEqual([method, path, 401]);
    }
    const res = await fetch(`${fleet.url}/members`);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="herd"');
  });

  test("with the primary's credential every one of them is served (none is a 404 'no route')", async () => {
    for (const [method, path] of ROUTES) {
      const r = await call(method, path, { body: method === "POST" ? { content: "x", question: "x", role: "nobody" } : undefined });
      expect([method, path, typeof r.body === "object" ? r.body?.error : null]).not.toEqual([method, path, expect.stringContaining("no route")]);
      expect(r.status).not.toBe(401);
    }
  });

  test("GET /member-credentials gives names and counts, never a value; herd's secrets and TMUX are blocked", async () => {
    const r = await call("GET", "/member-credentials");
    expect(r.status).toBe(200);
    const body = r.body;
    expect(body).toMatchObject({ present: true, policy: "allow-list" });
    // ANTHROPIC_API_KEY is set in the router's environment: a spawn of the profile that asks for it is refused, so it is not allowed.
    expect(body.allowed).toEqual(["HOME", "NOT_A_SECRET", "PATH", "STAND_IN_DIR"]);
    expect(body.known).toContain("ANTHROPIC_API_KEY");
    expect(body.known).toEqual(expect.arrayContaining(["TMUX", "TMUX_PANE", "TEST_PRIMARY_TOKEN", "HERD_TOKEN"]));
    expect(body.allowed).not.toContain("TMUX");
    expect(body.allowed).not.toContain("TEST_PRIMARY_TOKEN");
    expect([body.knownCount, body.allowedCount]).toEqual([body.known.length, body.allowed.length]);
    expect(body.blockedCount).toBe(body.known.length - body.allowed.length);
    for (const secret of [PRIMARY, ARCHITECT, "visible", "sk-ant-not-for-workers"]) expect(JSON.stringify(body)).not.toContain(secret);
  });

  test("GET /profiles lists each profile and the default", async () => {
    const r = await call("GET", "/profiles");
    expect(r.body.defaultProfile).toBe("stand-in");
    expect(r.body.profiles.map((p: any) => p.name)).toEqual(["stand-in", "stand-in-mcp", "single", "leaky"]);
    expect(r.body.profiles.find((p: any) => p.name === "single")).toMatchObject({ capacity: 1, running: 0 });
  });

  test("the architect (credential from a file) may read and send, not spawn, stop or drain", async () => {
    const token = ARCHITECT;
    expect((await call("GET", "/members", { token })).status).toBe(200);
    expect((await send(w, { content: "reply from the architect" }, token)).body.reply).toBe("from the architect");
    for (const [method, path] of [["POST", "/members"], ["DELETE", "/members/pane-999"], ["GET", `/sessions/${w}/replies`]] as const) {
      const r = await call(method, path, { token });
      expect([path, r.status, r.body.error]).toEqual([path, 403, "forbidden"]);
    }
  });

  test("a worker may read, not send, drain or spawn; the primary may not reply or ask for a worker", async () => {
    expect((await call("GET", "/members", { token: wToken })).status).toBe(200);
    expect((await send(w, { content: "reply x" }, wToken)).status).toBe(403);
    expect((await call("GET", `/sessions/${w}/replies`, { token: wToken })).status).toBe(403);
    expect((await call("POST", "/members", { token: wToken })).status).toBe(403);
    const asPrimary = await call("POST", `/sessions/${w}/reply`, { body: { content: "x" } });
    expect([asPrimary.status, asPrimary.body.error]).toEqual([403, "forbidden"]);
    expect((await call("POST", `/sessions/${w}/ask`, { body: { question: "x" } })).status).toBe(403);
  });
});

describe("POST /members", () => {
  test("201 with the worker's view; GET /members lists it under `workers`; /sessions and /agents show its pane", async () => {
    const view = await spawn({ role: "reviewer" });
    expect(view).toMatchObject({ terminalId: view.sessionId, profile: "stand-in", role: "reviewer", ownerTerminal: "primary", state: "idle", cwd: fleet.dir });
    expect(view.paneId).toMatch(/^pane-\d+$/);
    const roster = (await call("GET", "/members")).body;
    expect(roster.members).toBeUndefined();
    expect(roster.workers.find((r: any) => r.sessionId === view.sessionId)).toMatchObject({ paneId: view.paneId, role: "reviewer", owner: "primary", liveStatus: "running" });
    expect((await call("GET", "/sessions")).body.sessions.map((s: any) => s.name)).toContain(view.sessionId);
    expect((await call("GET", "/agents")).body.agents.find((a: any) => a.paneId === view.paneId)).toMatchObject({ workspace: view.sessionId, dead: false });
    expect((await call("DELETE", `/members/${view.paneId}`)).status).toBe(204);
  });

  test("the worker's environment: the allow-list, herd's own variables, nothing else", async () => {
    const { env, cwd } = await fleet.standIn(w);
    expect(env).toMatchObject({
      HERD_URL: fleet.url,
      HERD_MCP_URL: `${fleet.url}/mcp`,
      HERD_SESSION_ID: w,
      HERD_ROLE: "dev",
      OPENAI_BASE_URL: `${fleet.url}/v1`,
      ANTHROPIC_BASE_URL: fleet.url,
      // herd's key for its models (the profile's clientKey), not the operator's provider key
      OPENAI_API_KEY: WORKERS_KEY,
      ANTHROPIC_API_KEY: WORKERS_KEY,
      NOT_A_SECRET: "visible",
    });
    expect(env.HERD_TOKEN).toMatch(/^hw_/);
    for (const name of ["TMUX", "TMUX_PANE", "TEST_PRIMARY_TOKEN", "SECRET_NOT_LISTED"]) expect(Object.keys(env)).not.toContain(name);
    expect(cwd).toBe(fleet.dir);
  });

  test("the credential is on no command line (not tmux's, not the worker's) and the file that carried it is gone", async () => {
    const token = (await fleet.standIn(w)).env.HERD_TOKEN!;
    const cmdlines = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .map((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8");
        } catch {
          return ""; // the process is gone
        }
      });
    expect(cmdlines.some((c) => c.includes(`tmux\0-u\0-L\0${fleet.socket}`))).toBe(true); // the scan sees herd's tmux
    expect(cmdlines.filter((c) => c.includes(token))).toEqual([]);
    // The worker's shell removes the file once it has read it, which on a busy machine can come a moment after the spawn answered.
    const envFiles = () => readdirSync(join(fleet.dir, "data", "agents")).filter((f) => f.endsWith(".env"));
    await eventually(async () => envFiles().length === 0, 5000, "the credential's file removed");
  });

  test("400 unknown_role, 400 unknown_profile, 400 for worktree=true without a ticket, bad JSON", async () => {
    const role = await call("POST", "/members?role=manager");
    expect([role.status, role.body.error]).toEqual([400, "unknown_role"]);
    expect(role.body.detail).toContain("architect, dev, reviewer");
    const profile = await call("POST", "/members", { body: { profile: "nope" } });
    expect([profile.status, profile.body.error]).toEqual([400, "unknown_profile"]);
    // A name every object answers to is no profile either (it was a 500).
    for (const name of ["__proto__", "constructor", "toString"]) {
      const own = await call("POST", "/members", { body: { profile: name } });
      expect([own.status, own.body.error]).toEqual([400, "unknown_profile"]);
    }
    const worktree = await call("POST", "/members?worktree=true");
    expect([worktree.status, worktree.body.error]).toEqual([400, "bad_request"]);
    expect(worktree.body.detail).toContain("ticket");
    const json = await call("POST", "/members", { body: "{not json" });
    expect([json.status, json.body.error]).toEqual([400, "bad_request"]);
    const cwd = await call("POST", "/members", { body: { cwd: "/no/such/dir" } });
    expect([cwd.status, cwd.body.detail]).toEqual([400, expect.stringContaining("cwd")]);
  });

  test("403 subscription_boundary when the profile would hand the worker a provider's key", async () => {
    const r = await call("POST", "/members", { body: { profile: "leaky" } });
    expect([r.status, r.body.error]).toEqual([403, "subscription_boundary"]);
    expect(r.body.detail).toContain("ANTHROPIC_API_KEY");
    expect(r.body.detail).not.toContain("sk-ant");
  });

  test("503 no_capacity past the profile's capacity; stopping a worker frees its slot", async () => {
    const first = await spawn({ profile: "single" });
    const over = await call("POST", "/members", { body: { profile: "single" } });
    expect([over.status, over.body.error]).toEqual([503, "no_capacity"]);
    expect((await call("DELETE", `/members/${first.paneId}`)).status).toBe(204);
    const again = await spawn({ profile: "single" });
    expect((await call("DELETE", `/members/${again.paneId}`)).status).toBe(204);
  });

  test("worktree=true with a ticket: the worker runs in its own git worktree on branch herd/<ticket>", async () => {
    const repo = join(fleet.dir, "repo");
    mkdirSync(repo);
    const git = (...args: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: repo, stderr: "pipe" });
    git("init", "-q");
    git("commit", "-q", "--allow-empty", "-m", "start");
    const view = await spawn({ cwd: repo, worktree: true, ticket: "T-42" });
    expect(view.branch).toBe("herd/T-42");
    expect(view.worktree).toBe(join(fleet.dir, "data", "worktrees", "repo", "T-42"));
    expect((await fleet.standIn(view.sessionId)).cwd).toBe(view.worktree!);
    expect(git("worktree", "list").stdout.toString()).toContain("[herd/T-42]");
    expect((await call("DELETE", `/members/${view.paneId}`)).status).toBe(204);
    const notRepo = await call("POST", "/members", { body: { cwd: "/", worktree: "T-43" } });
    expect([notRepo.status, notRepo.body.detail]).toEqual([400, expect.stringContaining("not inside a git repository")]);
  });
});

describe("POST /sessions/{id}/message", () => {
  test("a blocking send returns the worker's reply: 200 replySource reply", async () => {
    expect(await send(w, { content: "reply hello there" })).toEqual({ status: 200, body: { sessionId: w, reply: "hello there", replySource: "reply" } });
  });

  test("a blank content, a wrong timeoutMs or wait is a 400 bad_request naming the field; an unknown session is 404", async () => {
    for (const [body, field] of [[{ content: "  " }, "content"], [{}, "content"], [{ content: "x", timeoutMs: "soon" }, "timeoutMs"], [{ content: "x", wait: "no" }, "wait"]] as const) {
      const r = await send(w, body);
      expect([r.status, r.body.error, r.body.detail]).toEqual([400, "bad_request", expect.stringContaining(field)]);
    }
    const none = await send("w-none", { content: "reply x" });
    expect([none.status, none.body.error]).toEqual([404, "session_not_found"]);
  });

  test("a question comes back as 202 with a turnId; answering it returns the reply; the same turnId again is 409 stale_turn", async () => {
    const q = await send(w, { content: "ask which colour?" });
    expect(q.status).toBe(202);
    expect(q.body).toMatchObject({ sessionId: w, status: "question", question: "which colour?" });
    expect((await status(w)).turn.ask).toMatchObject({ turnId: q.body.turnId, timeoutMs: 55000 }); // the ask's default
    const r = await send(w, { content: "blue", turnId: q.body.turnId });
    expect(r).toEqual({ status: 200, body: { sessionId: w, reply: "answer: blue", replySource: "reply" } });
    const stale = await send(w, { content: "red", turnId: q.body.turnId });
    expect([stale.status, stale.body.error, stale.body.sessionId]).toEqual([409, "stale_turn", w]);
  });

  test("a question nobody answers in its time: the worker hears 202 no_answer, its later reply waits in the inbox", async () => {
    const q = await send(w, { content: "ask-within 300 anyone?" });
    expect(q.body.status).toBe("question");
    const held = await eventually(async () => (await drain(w)).at(0), 5000, "the reply after no answer");
    expect(held).toBe("no answer (202 no_answer)");
    expect((await send(w, { content: "too late", turnId: q.body.turnId })).status).toBe(409);
  });

  test("a worker that only says its turn is done is answered from its pane: replySource transcript", async () => {
    const r = await send(w, { content: "transcript words from the pane" });
    expect(r.status).toBe(200);
    expect(r.body.replySource).toBe("transcript");
    expect(r.body.reply).toContain("said: words from the pane");
  });

  test("docs/agents.md's turn-done hook, its curl line run as printed in the worker's environment, answers the open turn from the pane", async () => {
    const { HERD_TOKEN, HERD_URL, HERD_SESSION_ID } = (await fleet.standIn(w)).env as Record<string, string>;
    const open = send(w, { content: "silent" });
    await eventually(async () => (await status(w)).turn?.phase === "working", 5000, "the turn in the pane");
    const hook = await runLine(printed("docs/agents.md", /"turnDone":true/), { env: { HERD_TOKEN, HERD_URL, HERD_SESSION_ID } });
    expect([hook.code, JSON.parse(hook.stdout)]).toEqual([0, { sessionId: w, delivered: true, outcome: "resolved_send" }]);
    expect((await open).body).toMatchObject({ sessionId: w, replySource: "transcript" });
  });

  test("timeout → 202 working; meanwhile another send → 202 busy; the late reply → inbox → drain (a second drain is empty)", async () => {
    const slow = await send(w, { content: "late 2500 finally done", timeoutMs: 800 });
    expect(slow.status).toBe(202);
    expect(slow.body).toMatchObject({ sessionId: w, status: "working" });
    expect(slow.body.detail).toContain("800 ms");
    expect((await status(w)).state).toBe("working");
    const busy = await send(w, { content: "reply x" });
    expect([busy.status, busy.body.status]).toEqual([202, "busy"]);
    expect(await eventually(async () => (await drain(w)).at(0), 5000, "the late reply")).toBe("finally done");
    expect(await drain(w)).toEqual([]);
    expect((await status(w)).state).toBe("idle");
  });

  test("timeoutMs is clamped into [1, 120000], default 25000; the ask's into [1, 115000]", async () => {
    const low = await send(w, { content: "late 300 after a short wait", timeoutMs: -5 });
    expect(low.status).toBe(202);
    expect(low.body.detail).toContain("within 1 ms");
    await eventually(async () => (await drain(w)).length === 1, 5000, "the reply");
    const high = send(w, { content: "late 1000 after a long wait", timeoutMs: 10_000_000 });
    expect(await eventually(async () => (await status(w)).turn?.waiting?.timeoutMs, 5000, "the send to wait")).toBe(120000);
    expect((await high).body.reply).toBe("after a long wait");
    const usual = send(w, { content: "late 1000 usual" });
    expect(await eventually(async () => (await status(w)).turn?.waiting?.timeoutMs, 5000, "the send to wait")).toBe(25000);
    await usual;
    const q = await send(w, { content: "ask-within 999999999 clamped?" });
    expect((await status(w)).turn.ask.timeoutMs).toBe(115000);
    expect((await send(w, { content: "yes", turnId: q.body.turnId })).body.reply).toBe("answer: yes");
  });

  test("wait:false returns 202 with a ticket; GET /tasks/{ticket} follows it to its reply; an unknown ticket is 404", async () => {
    const r = await send(w, { content: "late 500 async done", wait: false });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ sessionId: w, status: "accepted" });
    const first = await call("GET", `/tasks/${r.body.ticket}`);
    expect(["queued", "working"]).toContain(first.body.phase);
    const done = await eventually(async () => {
      const t = (await call("GET", `/tasks/${r.body.ticket}`)).body;
      return t.phase === "done" && t;
    });
    expect(done).toEqual({ ticket: r.body.ticket, sessionId: w, turn: r.body.turn, phase: "done", reply: "async done", replySource: "reply" });
    // The reply is the leads' to drain, and the worker's own: a sibling worker sees only where the task stands.
    const { sessionId: sibling, paneId: siblingPane } = await spawn();
    const siblingToken = (await fleet.standIn(sibling)).env.HERD_TOKEN!;
    expect((await call("GET", `/tasks/${r.body.ticket}`, { token: siblingToken })).body).toEqual({ ticket: r.body.ticket, sessionId: w, turn: r.body.turn, phase: "done" });
    expect((await call("GET", `/tasks/${r.body.ticket}`, { token: wToken })).body.reply).toBe("async done");
    const pending = await send(w, { content: "late 800 kept from the sibling", wait: false });
    const turn = await eventually(async () => (await call("GET", `/sessions/${w}/status`, { token: siblingToken })).body.turn, 3000, "the turn under way");
    expect(turn.reply).toBeUndefined();
    await eventually(async () => (await call("GET", `/tasks/${pending.body.ticket}`)).body.phase === "done", 5000, "the turn done");
    await call("DELETE", `/members/${siblingPane}`);
    const unknown = await call("GET", "/tasks/tk-nope");
    expect([unknown.status, unknown.body.error]).toEqual([404, "unknown_ticket"]);
  });

  test("an async turn that asks: the task is `asking` with the turnId; the answer (a blocking send) gets the reply, the task too", async () => {
    const r = await send(w, { content: "ask shape?", wait: false });
    const asking = await eventually(async () => {
      const t = (await call("GET", `/tasks/${r.body.ticket}`)).body;
      return t.phase === "asking" && t;
    });
    const answered = await send(w, { content: "round", turnId: asking.turnId });
    expect(answered.body.reply).toBe("answer: round");
    expect((await call("GET", `/tasks/${r.body.ticket}`)).body).toMatchObject({ phase: "done", reply: "answer: round" });
  });
});

describe("the worker's side: reply and ask", () => {
  const reply = (id: string, body: unknown, token = wToken) => call("POST", `/sessions/${id}/reply`, { body, token });

  test("reply outcomes: resolved_send, resolved_async_ticket, queued (delivered false); an empty reply is delivered as \"\"", async () => {
    const waiting = send(w, { content: "silent" });
    await eventually(async () => (await status(w)).turn?.waiting, 5000, "the send to wait");
    expect((await reply(w, { content: "by hand" })).body).toEqual({ sessionId: w, delivered: true, outcome: "resolved_send" });
    expect((await waiting).body.reply).toBe("by hand");

    const ticket = (await send(w, { content: "silent", wait: false })).body.ticket;
    expect((await reply(w, { content: "for the ticket" })).body).toMatchObject({ delivered: true, outcome: "resolved_async_ticket" });
    expect((await call("GET", `/tasks/${ticket}`)).body).toMatchObject({ phase: "done", reply: "for the ticket" });

    expect((await reply(w, {})).body).toEqual({ sessionId: w, delivered: false, outcome: "queued" });
    expect((await reply(w, { content: 7 })).status).toBe(400);
    expect(await drain(w)).toEqual([""]);
  });

  test("ask with no lead waiting is 409 no_pending_send; a blank question is 400", async () => {
    const r = await call("POST", `/sessions/${w}/ask`, { body: { question: "anyone?" }, token: wToken });
    expect([r.status, r.body.error, r.body.sessionId]).toEqual([409, "no_pending_send", w]);
    expect((await call("POST", `/sessions/${w}/ask`, { body: { question: " " }, token: wToken })).status).toBe(400);
  });

  test("a worker replying or asking for another session is refused: 403", async () => {
    const other = await spawn();
    const direct = await reply(other.sessionId, { content: "not mine" });
    expect([direct.status, direct.body.error]).toEqual([403, "forbidden"]);
    expect((await call("POST", `/sessions/${other.sessionId}/ask`, { body: { question: "x" }, token: wToken })).status).toBe(403);
    // The stand-in itself tries it mid-turn, then says what herd answered.
    expect((await send(w, { content: `reply-as ${other.sessionId} hijack` })).body.reply).toBe("reply-as status 403 forbidden");
    expect(await drain(other.sessionId)).toEqual([]);
    await call("DELETE", `/members/${other.paneId}`);
  });
});

describe("stopping and exits", () => {
  test("DELETE /members/{paneId} → 204: the worker and its pane are gone, its credential is dead (401); deleting it again is 204 too (idempotent, as the seed)", async () => {
    const view = await spawn();
    const token = (await fleet.standIn(view.sessionId)).env.HERD_TOKEN!;
    expect((await call("GET", "/members", { token })).status).toBe(200);
    const waiting = send(view.sessionId, { content: "silent" });
    await eventually(async () => (await status(view.sessionId)).turn?.waiting, 5000, "the send to wait");
    expect((await call("DELETE", `/members/${view.paneId}`)).status).toBe(204);
    expect((await waiting).body).toMatchObject({ status: "failed", detail: "the worker was stopped" });
    expect((await call("GET", "/members", { token })).status).toBe(401);
    expect((await call("POST", `/sessions/${view.sessionId}/reply`, { token, body: { content: "x" } })).status).toBe(401);
    expect((await call("GET", "/members")).body.workers.map((r: any) => r.sessionId)).not.toContain(view.sessionId);
    expect((await fleet.tmux(["list-panes", "-a", "-F", "#{session_name}"])).out).not.toContain(view.sessionId);
    expect((await call("GET", `/sessions/${view.sessionId}/status`)).status).toBe(404);
    expect((await call("DELETE", `/members/${view.paneId}`)).status).toBe(204);
  });

  test("a worker that exits mid-turn: the send is 202 failed, the roster says exited, its credential is dead", async () => {
    const view = await spawn();
    const token = (await fleet.standIn(view.sessionId)).env.HERD_TOKEN!;
    const r = await send(view.sessionId, { content: "exit 3" });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: "failed", detail: "the worker exited with status 3" });
    const row = (await call("GET", "/members")).body.workers.find((x: any) => x.sessionId === view.sessionId);
    expect(row).toMatchObject({ state: "exited", exitStatus: 3, liveStatus: "gone" });
    expect((await call("GET", "/members", { token })).status).toBe(401);
    expect((await send(view.sessionId, { content: "reply x" })).body.status).toBe("failed");
    expect((await call("DELETE", `/members/${view.paneId}`)).status).toBe(204);
  });
});

describe("GET /metrics", () => {
  test("Prometheus text for any authenticated caller: routed requests by status/model/node, queues, workers", async () => {
    expect((await call("GET", "/metrics", { token: null })).status).toBe(401);
    const chat = (key: string | undefined) =>
      fetch(`${fleet.url}/api/chat`, { method: "POST", headers: key ? { authorization: `Bearer ${key}` } : {}, body: JSON.stringify({ model: "llama3.2:3b", stream: false, messages: [{ role: "user", content: "hi" }] }) });
    expect((await chat(undefined)).status).toBe(401);
    // A worker calls the herd's models with the key from its environment.
    expect((await chat((await fleet.standIn(w)).env.OPENAI_API_KEY)).status).toBe(200);
    const text = await eventually(async () => {
      const r = await call("GET", "/metrics", { token: wToken });
      return r.status === 200 && (r.body as string).includes('herd_requests_total{status="completed",model="llama3.2:3b",node="a"} 1') && (r.body as string);
    }, 5000, "the request in /metrics");
    expect(text).toContain("# TYPE herd_requests_total counter");
    expect(text).toContain('herd_requests_in_flight{node="a",model="llama3.2:3b"} 0');
    expect(text).toContain('herd_agents_workers{profile="stand-in",state="idle"} 1');
    expect(text).toMatch(/herd_agents_sends_total\{outcome="reply"\} \d+/);
  });
});

describe("the router's stop", () => {
  test("ends every worker and the fleet's tmux server, socket file included", async () => {
    expect((await fleet.tmux(["list-sessions", "-F", "#{session_name}"])).out).toContain(w);
    expect(await fleet.stopRouter()).toBe(0);
    const after = await fleet.tmux(["list-sessions"]);
    expect(after.code).not.toBe(0);
    expect(after.out).toMatch(/no server running|error connecting/);
    expect(existsSync(join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid!()}`, fleet.socket))).toBe(false);
  });
});
