// The agent fleet's robustness (issue 17), with the stand-in agent in real tmux
// panes: the raw lists before any tmux server runs, one rule for unknown fields
// on REST and MCP, stop of an unknown pane, peek and ack over REST, bounded
// inboxes, turns that time out or are cancelled, detached children ended on
// DELETE and shutdown, and the workers a killed router left behind stopped by the
// next one, on another port.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Fleet, mcpClient, PRIMARY, startFleet } from "./agents-fleet.ts";
import { cleanupFile, eventually, herd, ROOT, tmpDir } from "./helpers.ts";

setDefaultTimeout(30_000);

let fleet: Fleet;
const call = (method: string, path: string, opts?: { token?: string | null; body?: unknown }) => fleet.call(method, path, opts);
const spawn = async () => {
  const r = await call("POST", "/members", { body: {} });
  expect(r.status).toBe(201);
  const view = r.body as { sessionId: string; paneId: string };
  return { ...view, token: (await fleet.standIn(view.sessionId)).env.HERD_TOKEN! };
};
const status = async (id: string) => (await call("GET", `/sessions/${id}/status`)).body;
const workerReply = (w: { sessionId: string; token: string }, content: string) => call("POST", `/sessions/${w.sessionId}/reply`, { token: w.token, body: { content } });

/** Not gone and not a zombie (a container's init may never reap one). */
const running = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return false;
  }
};
/** The processes started with this worker's session id in their environment. */
const marked = (sessionId: string) =>
  readdirSync("/proc").filter((p) => {
    try {
      return /^\d+$/.test(p) && readFileSync(`/proc/${p}/environ`, "latin1").split("\0").includes(`HERD_SESSION_ID=${sessionId}`);
    } catch {
      return false;
    }
  });
/** The worker starts a setsid'd and a nohup'd `sleep`, which outlive it unless herd ends them. */
const detachedChildren = async (sessionId: string) => {
  const r = await call("POST", `/sessions/${sessionId}/message`, { body: { content: "detach" } });
  expect(r.status).toBe(200);
  const pids = r.body.reply.split(" ").slice(1).map(Number) as number[];
  expect(pids.map(running)).toEqual([true, true]);
  return pids;
};

afterAll(cleanupFile);

beforeAll(async () => {
  fleet = await startFleet({ agents: "turnTimeoutMs: 1500, inbox: { maxReplies: 3, maxBytes: 1000 }," });
});

afterAll(async () => {
  await fleet?.stop();
});

describe("before the first spawn", () => {
  test("GET /sessions and GET /agents answer 200 with empty lists while the fleet's tmux server is not running", async () => {
    expect((await fleet.tmux(["list-sessions"])).code).not.toBe(0);
    const sessions = await call("GET", "/sessions");
    expect([sessions.status, sessions.body.sessions]).toEqual([200, []]);
    const agents = await call("GET", "/agents");
    expect([agents.status, agents.body.agents]).toEqual([200, []]);
  });
});

describe("without tmux on the router's machine", () => {
  test("GET /sessions and GET /agents are a 502 backend_error that says so, not a 500", async () => {
    const bare = await startFleet({ env: { PATH: "/nonexistent" } });
    try {
      for (const path of ["/sessions", "/agents"]) {
        const r = await bare.call("GET", path);
        expect([path, r.status, r.body.error, r.body.detail]).toEqual([path, 502, "backend_error", expect.stringContaining("tmux is not installed")]);
      }
    } finally {
      await bare.stop();
    }
  });
});

describe("REST and MCP say the same", () => {
  test("an unknown field is a 400 naming it on both faces", async () => {
    const rest = await call("POST", "/sessions/w-none/message", { body: { content: "x", timeoutMS: 5 } });
    expect([rest.status, rest.body.error]).toEqual([400, "bad_request"]);
    expect(rest.body.detail).toContain("timeoutMS: unknown key");
    const mcp = await mcpClient(fleet.url, PRIMARY);
    const viaMcp = await mcp.tool("fleet_send", { target: "w-none", content: "x", timeoutMS: 5 });
    await mcp.close();
    expect([viaMcp.status, viaMcp.body.error, viaMcp.body.detail]).toEqual([400, "bad_request", rest.body.detail]);
    const query = await call("GET", "/sessions/w-none/replies?peak=true");
    expect([query.status, query.body.detail]).toEqual([400, expect.stringContaining("peak: unknown key")]);
  });

  test("the routes herd adds to the seed's (cancel, ack) want a credential like the others", async () => {
    for (const [method, path] of [["POST", "/sessions/w-none/cancel"], ["DELETE", "/sessions/w-none/replies/msg-none"]] as const) {
      expect([path, (await call(method, path, { token: null })).status]).toEqual([path, 401]);
      expect([path, (await call(method, path)).body.error]).toEqual([path, "session_not_found"]);
    }
  });

  // Issue 28, item 8: as the seed's stopMember, a stop is idempotent, and fleet_stop answers what DELETE does.
  test("stopping a pane no worker has is 204, as the seed's; fleet_stop answers REST's 204 with no body, a live worker's too", async () => {
    const rest = await call("DELETE", "/members/pane-999");
    expect([rest.status, rest.body]).toEqual([204, ""]);
    const mcp = await mcpClient(fleet.url, PRIMARY);
    try {
      expect(await mcp.tool("fleet_stop", { paneId: "pane-999" })).toEqual({ status: 204, isError: false, body: {} });
      const w = await spawn();
      expect(await mcp.tool("fleet_stop", { paneId: w.paneId })).toEqual({ status: 204, isError: false, body: {} });
      expect((await status(w.sessionId)).error).toBe("session_not_found");
    } finally {
      await mcp.close();
    }
  });

  test("REST peeks (?peek=true keeps the replies) and acks one (DELETE /sessions/{id}/replies/{msgId})", async () => {
    const w = await spawn();
    for (const content of ["one", "two"]) expect((await workerReply(w, content)).body.outcome).toBe("queued");
    const peek = async () => (await call("GET", `/sessions/${w.sessionId}/replies?peek=true`)).body.replies;
    const held = await peek();
    expect(held.map((r: any) => r.content)).toEqual(["one", "two"]);
    expect(await peek()).toEqual(held);
    const ack = await call("DELETE", `/sessions/${w.sessionId}/replies/${held[0].msgId}`);
    expect([ack.status, ack.body]).toEqual([200, { sessionId: w.sessionId, msgId: held[0].msgId, acked: true }]);
    expect((await call("GET", `/sessions/${w.sessionId}/replies?peek=false`)).body.replies.map((r: any) => r.content)).toEqual(["two"]);
    expect((await call("GET", `/sessions/${w.sessionId}/replies`)).body.replies).toEqual([]);
    expect((await call("DELETE", `/sessions/${w.sessionId}/replies/${held[0].msgId}`, { token: w.token })).status).toBe(403);
    await call("DELETE", `/members/${w.paneId}`);
  });
});

describe("bounded inboxes (agents.inbox)", () => {
  test("a reply past the count or the bytes cap is a 429 inbox_full, counted in /metrics, until a lead drains", async () => {
    const w = await spawn();
    for (const content of ["a", "b", "c"]) expect((await workerReply(w, content)).status).toBe(200);
    const full = await workerReply(w, "d");
    expect([full.status, full.body.error, full.body.sessionId]).toEqual([429, "inbox_full", w.sessionId]);
    expect(full.body.detail).toContain("agents.inbox.maxReplies");
    expect((await call("GET", `/sessions/${w.sessionId}/replies`)).body.replies).toHaveLength(3);
    expect((await workerReply(w, "x".repeat(600))).status).toBe(200);
    const big = await workerReply(w, "y".repeat(600));
    expect([big.status, big.body.error]).toEqual([429, "inbox_full"]);
    expect(big.body.detail).toContain("agents.inbox.maxBytes");
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toContain("herd_agents_inbox_refusals_total 2");
    await call("DELETE", `/members/${w.paneId}`);
  });
});

describe("turns never wedge", () => {
  test("a turn without a reply is given up after agents.turnTimeoutMs: its ticket fails and the worker is idle", async () => {
    const w = await spawn();
    const sent = await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "silent", wait: false } });
    expect(sent.body.status).toBe("accepted");
    const open = await status(w.sessionId);
    expect(open.state).toBe("working");
    expect(open.turn.expiresAt - open.turn.since).toBeWithin(1500, 1600); // agents.turnTimeoutMs after it was sent
    const task = await eventually(async () => {
      const t = (await call("GET", `/tasks/${sent.body.ticket}`)).body;
      return t.phase === "failed" && t;
    }, 5000, "the turn to time out");
    expect(task.detail).toContain("agents.turnTimeoutMs");
    expect((await status(w.sessionId)).state).toBe("idle");
    expect((await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "reply back" } })).body.reply).toBe("back");
    await call("DELETE", `/members/${w.paneId}`);
  });

  test("a lead cancels an open turn (REST and fleet_cancel): the waiting send learns 'failed', the worker is idle", async () => {
    const w = await spawn();
    const blocked = call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "silent", timeoutMs: 10_000 } });
    await eventually(async () => (await status(w.sessionId)).state === "working", 3000, "the turn to open");
    const cancel = await call("POST", `/sessions/${w.sessionId}/cancel`);
    expect([cancel.status, cancel.body]).toEqual([200, { sessionId: w.sessionId, cancelled: true }]);
    const outcome = await blocked;
    expect([outcome.status, outcome.body.status, outcome.body.detail]).toEqual([202, "failed", expect.stringContaining("cancelled")]);
    expect((await status(w.sessionId)).state).toBe("idle");
    const again = await call("POST", `/sessions/${w.sessionId}/cancel`);
    expect([again.status, again.body.error]).toEqual([409, "no_open_turn"]);
    expect((await call("POST", `/sessions/${w.sessionId}/cancel`, { body: { turnId: "x" } })).body.detail).toContain("turnId: unknown key");

    const ticket = (await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "silent", wait: false } })).body.ticket;
    const mcp = await mcpClient(fleet.url, PRIMARY);
    const viaMcp = await mcp.tool("fleet_cancel", { target: w.sessionId });
    await mcp.close();
    expect([viaMcp.status, viaMcp.body]).toEqual([200, { sessionId: w.sessionId, cancelled: true }]);
    expect((await call("GET", `/tasks/${ticket}`)).body.phase).toBe("failed");
    expect((await call("POST", `/sessions/${w.sessionId}/cancel`, { token: w.token })).status).toBe(403);
    await call("DELETE", `/members/${w.paneId}`);
  });
});

// Issue 28, item 7: a `cli` profile says when its program is ready (a pattern its screen shows), and spawn answers
// 201 only then: a turn sent right after it reaches a program that drops what is typed while it starts.
describe("a cli profile declares when its program is ready", () => {
  test("spawn answers 201 once the screen shows the profile's ready pattern; the first turn is not lost", async () => {
    const slow = (ready: string) => JSON.stringify({ command: process.execPath, args: [join(ROOT, "test/fixtures/slow-start-agent.ts"), "2500"], env: ["PATH"], clientKey: "workers", ...(ready ? { ready: { screen: ready } } : {}) });
    const own = await startFleet({ profiles: `slow: ${slow("^slow-agent ready ❯")},` });
    try {
      const w = await own.call("POST", "/members", { body: { profile: "slow" } });
      expect(w.status).toBe(201);
      const first = await own.call("POST", `/sessions/${w.body.sessionId}/message`, { body: { content: "reply first turn", timeoutMs: 5000 } });
      expect([first.status, first.body.reply]).toEqual([200, "first turn"]);
    } finally {
      await own.stop();
    }
  });

  test("a ready pattern that is no regular expression, too long, or on a kind herd knows is refused at start, naming the field", async () => {
    const profile = (fields: string) => ["herd.config.json", JSON.stringify({ agents: { profiles: { p: { command: "x", ...JSON.parse(fields) } } } })] as const;
    for (const [fields, said] of [
      ['{"ready":{"screen":"(unclosed"}}', "agents.profiles.p.ready.screen: expected a valid regular expression"],
      [`{"ready":{"screen":"${"a".repeat(201)}"}}`, "agents.profiles.p.ready.screen: expected a regular expression of at most 200 characters"],
      ['{"kind":"codex","ready":{"screen":"x"}}', 'agents.profiles.p.ready: only a kind "cli" profile declares ready'],
    ]) {
      const [name, text] = profile(fields);
      const file = join(tmpDir(), name);
      writeFileSync(file, text);
      const r = await herd(["check-config", file]);
      expect([r.code, r.stderr]).toEqual([1, expect.stringContaining(said)]);
    }
  });
});

// Issue 28, item 2: a reply belongs to a turn. A worker names the turn it answers (the id herd gives with the turn);
// a reply for a turn that is over is kept in the inbox with that id and never answers the open one.
describe("replies belong to a turn", () => {
  test("a cancelled turn's late reply (naming its turn) goes to the inbox; the next turn gets its own reply", async () => {
    const w = await spawn();
    const first = await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "late-own 1500 T1 result: the build passed", timeoutMs: 300 } });
    expect([first.status, first.body.status, first.body.turn]).toEqual([202, "working", expect.stringMatching(/^t-[0-9a-f]{12}$/)]);
    expect((await status(w.sessionId)).turn.id).toBe(first.body.turn);
    expect((await call("POST", `/sessions/${w.sessionId}/cancel`)).status).toBe(200);
    const next = await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "reply Paris", timeoutMs: 10_000 } });
    expect([next.status, next.body.reply]).toEqual([200, "Paris"]);
    const held = (await call("GET", `/sessions/${w.sessionId}/replies`)).body.replies;
    expect(held).toEqual([{ msgId: expect.any(String), content: "T1 result: the build passed", turn: first.body.turn }]);
    await call("DELETE", `/members/${w.paneId}`);
  });

  test("a reply or a question naming another turn than the open one never answers it", async () => {
    const w = await spawn();
    const task = (await call("POST", `/sessions/${w.sessionId}/message`, { body: { content: "silent", wait: false } })).body;
    expect(task.turn).toMatch(/^t-[0-9a-f]{12}$/);
    expect((await call("GET", `/tasks/${task.ticket}`)).body.turn).toBe(task.turn);
    const other = await call("POST", `/sessions/${w.sessionId}/reply`, { token: w.token, body: { content: "for another turn", turn: "t-000000000000" } });
    expect([other.status, other.body.delivered, other.body.outcome]).toEqual([200, false, "queued"]);
    const ask = await call("POST", `/sessions/${w.sessionId}/ask`, { token: w.token, body: { question: "which?", turn: "t-000000000000" } });
    expect([ask.status, ask.body.error, ask.body.detail]).toEqual([409, "no_pending_send", expect.stringContaining(task.turn)]);
    expect(["queued", "working"]).toContain((await call("GET", `/tasks/${task.ticket}`)).body.phase);
    const own = await call("POST", `/sessions/${w.sessionId}/reply`, { token: w.token, body: { content: "mine", turn: task.turn } });
    expect([own.status, own.body.outcome]).toEqual([200, "resolved_async_ticket"]);
    expect((await call("GET", `/tasks/${task.ticket}`)).body).toMatchObject({ phase: "done", reply: "mine" });
    const long = await call("POST", `/sessions/${w.sessionId}/reply`, { token: w.token, body: { content: "x", turn: "t".repeat(65) } });
    expect([long.status, long.body.detail]).toEqual([400, expect.stringContaining("turn:")]);
    await call("DELETE", `/members/${w.paneId}`);
  });
});

describe("a worker's processes end with it", () => {
  test("DELETE ends the worker's detached children (setsid, nohup) too", async () => {
    const w = await spawn();
    const pids = await detachedChildren(w.sessionId);
    expect((await call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
    await eventually(async () => !pids.some(running), 5000, "the detached children to end");
    expect(marked(w.sessionId)).toEqual([]);
  });

  test("a router killed without a shutdown: the next one, on another port, stops what it left; its own shutdown ends its workers' children", async () => {
    const w = await spawn();
    const pids = await detachedChildren(w.sessionId);
    const oldSocket = fleet.socket;
    const old = fleet;
    fleet = await old.crash();
    try {
      expect(fleet.socket).not.toBe(oldSocket);
      expect(pids.map(running)).toEqual([false, false]); // stopped before the new router serves
      expect(marked(w.sessionId)).toEqual([]);
      expect((await old.tmux(["list-sessions"])).code).not.toBe(0); // the dead router's tmux server is gone too
      expect((await call("GET", "/members", { token: w.token })).status).toBe(401);
      expect((await call("GET", "/members")).body.workers).toEqual([]);

      const next = await spawn();
      const children = await detachedChildren(next.sessionId);
      expect(await fleet.stopRouter()).toBe(0);
      expect(children.map(running)).toEqual([false, false]);
      expect(marked(next.sessionId)).toEqual([]);
    } finally {
      await old.stop(); // its tmux server, should anything be left
    }
  });
});
