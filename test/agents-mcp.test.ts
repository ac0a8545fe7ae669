// The agent fleet over MCP (the official SDK's Client + StreamableHTTPClientTransport)
// against REST: one script of the shared cases runs once through each face,
// with workers that answer through the same face, and the outcomes (statuses
// and bodies, ids normalised) must be the same. Then what only MCP has:
// identity from the connection, fleet_whoami, fleet_ack.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Fleet, mcpClient, PRIMARY, type Said, startFleet } from "./agents-fleet.ts";
import { cleanupFile, eventually } from "./helpers.ts";

setDefaultTimeout(60_000);

let fleet: Fleet;
let primary: Awaited<ReturnType<typeof mcpClient>>;

afterAll(cleanupFile);

beforeAll(async () => {
  fleet = await startFleet();
  primary = await mcpClient(fleet.url, PRIMARY);
});

afterAll(async () => {
  await primary?.close();
  await fleet?.stop();
});

/** The operations both faces offer, in each face's own terms. */
interface Face {
  profile: string;
  spawn(args: Record<string, unknown>): Promise<Said>;
  stop(paneId: string): Promise<Said>;
  send(target: string, args: Record<string, unknown>): Promise<Said>;
  drain(target: string): Promise<Said>;
  task(ticket: string): Promise<Said>;
  status(target: string): Promise<Said>;
  profiles(): Promise<Said>;
}

const rest = (): Face => ({
  profile: "stand-in",
  spawn: (body) => fleet.call("POST", "/members", { body }),
  stop: (paneId) => fleet.call("DELETE", `/members/${paneId}`),
  send: (target, body) => fleet.call("POST", `/sessions/${target}/message`, { body }),
  drain: (target) => fleet.call("GET", `/sessions/${target}/replies`),
  task: (ticket) => fleet.call("GET", `/tasks/${ticket}`),
  status: (target) => fleet.call("GET", `/sessions/${target}/status`),
  profiles: () => fleet.call("GET", "/profiles"),
});

const mcp = (): Face => ({
  profile: "stand-in-mcp",
  spawn: (args) => primary.tool("fleet_spawn", args),
  stop: (paneId) => primary.tool("fleet_stop", { paneId }),
  send: (target, args) => primary.tool("fleet_send", { target, ...args }),
  drain: (target) => primary.tool("fleet_poll", { target }),
  task: (ticket) => primary.tool("fleet_poll", { ticket }),
  status: (target) => primary.tool("fleet_status", { target }),
  profiles: () => primary.tool("fleet_profiles"),
});

// Ids, times and the profile differ between the two runs by construction; nothing else may.
function normalise(said: Said): Said {
  const text = JSON.stringify({ status: said.status, body: said.body })
    .replaceAll(/w-[0-9a-f]{12}/g, "<session>")
    .replaceAll(/turn-[0-9a-f]{12}/g, "<turn>")
    .replaceAll(/\bt-[0-9a-f]{12}/g, "<turn id>")
    .replaceAll(/tk-[0-9a-f]{12}/g, "<ticket>")
    .replaceAll(/msg-[0-9a-f]{12}/g, "<msg>")
    .replaceAll(/pane-\d+/g, "<pane>")
    .replaceAll(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>")
    .replaceAll("stand-in-mcp", "stand-in");
  return JSON.parse(text);
}

/** The shared cases, in order; each step's outcome is recorded under its name. */
async function script(face: Face): Promise<Record<string, Said>> {
  const out: Record<string, Said> = {};
  const record = (name: string, said: Said) => {
    out[name] = normalise(said);
    return said;
  };
  record("unknown role", await face.spawn({ role: "manager" }));
  record("unknown profile", await face.spawn({ profile: "nope" }));
  record("worktree without ticket", await face.spawn({ worktree: true }));
  record("subscription boundary", await face.spawn({ profile: "leaky" }));
  const single = record("spawn single", await face.spawn({ profile: "single" }));
  record("no capacity", await face.spawn({ profile: "single" }));
  await face.stop(single.body.paneId);

  const spawned = await face.spawn({ profile: face.profile });
  record("spawn", { status: spawned.status, body: { ...spawned.body, cwd: "<cwd>" } });
  const w = spawned.body.sessionId as string;
  record("blocking send → reply", await face.send(w, { content: "reply hello" }));
  record("blank content", await face.send(w, { content: " " }));

  const q = record("send → question", await face.send(w, { content: "ask which colour?" }));
  record("answer with turnId → reply", await face.send(w, { content: "blue", turnId: q.body.turnId }));
  record("stale turnId", await face.send(w, { content: "red", turnId: q.body.turnId }));
  record("transcript", await face.send(w, { content: "transcript from the pane" }));

  record("timeout → working", await face.send(w, { content: "late 2500 late words", timeoutMs: 800 }));
  record("busy", await face.send(w, { content: "reply x" }));
  await eventually(async () => (await face.status(w)).body.inbox === 1, 10_000, "the late reply");
  record("drain", await face.drain(w));
  record("second drain", await face.drain(w));

  const accepted = record("wait:false → ticket", await face.send(w, { content: "late 300 async words", wait: false }));
  const done = await eventually(async () => {
    const t = await face.task(accepted.body.ticket);
    return t.body.phase === "done" && t;
  }, 10_000, "the task");
  record("poll the ticket", done);
  record("unknown ticket", await face.task("tk-000000000000"));

  record("worker exits mid-turn", await face.send(w, { content: "exit 3" }));
  record("send to an exited worker", await face.send(w, { content: "reply x" }));
  const stopped = await face.stop(spawned.body.paneId);
  out.stop = { status: stopped.status === 204 || stopped.body?.stopped === true ? 204 : stopped.status, body: null };
  record("send after stop", await face.send(w, { content: "reply x" }));
  return out;
}

describe("REST and MCP give the same outcomes", () => {
  test("the shared cases, run through each face", async () => {
    const viaRest = await script(rest());
    const viaMcp = await script(mcp());
    expect(Object.keys(viaMcp)).toEqual(Object.keys(viaRest));
    for (const name of Object.keys(viaRest)) expect([name, viaMcp[name]]).toEqual([name, viaRest[name]]);
    // The script does check what it should (a parity of two broken faces would pass too).
    expect(viaRest["blocking send → reply"]).toEqual({ status: 200, body: { sessionId: "<session>", reply: "hello", replySource: "reply" } });
    expect(viaRest["send → question"]!.body).toMatchObject({ status: "question", turnId: "<turn>" });
    expect(viaRest["answer with turnId → reply"]!.body.reply).toBe("answer: blue");
    expect(viaRest["stale turnId"]!.status).toBe(409);
    expect(viaRest["transcript"]!.body).toMatchObject({ replySource: "transcript", reply: "said: from the pane" });
    expect(viaRest["timeout → working"]).toMatchObject({ status: 202, body: { status: "working" } });
    expect(viaRest["busy"]).toMatchObject({ status: 202, body: { status: "busy" } });
    expect(viaRest["drain"]!.body.replies).toEqual([{ msgId: "<msg>", content: "late words" }]);
    expect(viaRest["second drain"]!.body.replies).toEqual([]);
    expect(viaRest["poll the ticket"]!.body).toMatchObject({ phase: "done", reply: "async words" });
    expect(viaRest["unknown ticket"]).toMatchObject({ status: 404, body: { error: "unknown_ticket" } });
    expect(viaRest["unknown role"]).toMatchObject({ status: 400, body: { error: "unknown_role" } });
    expect(viaRest["unknown profile"]).toMatchObject({ status: 400, body: { error: "unknown_profile" } });
    expect(viaRest["worktree without ticket"]).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(viaRest["subscription boundary"]).toMatchObject({ status: 403, body: { error: "subscription_boundary" } });
    expect(viaRest["no capacity"]).toMatchObject({ status: 503, body: { error: "no_capacity" } });
    expect(viaRest["worker exits mid-turn"]).toMatchObject({ status: 202, body: { status: "failed" } });
    expect(viaRest.stop!.status).toBe(204);
    expect(viaRest["send after stop"]).toMatchObject({ status: 404, body: { error: "session_not_found" } });
  });

  test("fleet_profiles and fleet_status give the REST bodies", async () => {
    expect(await mcp().profiles()).toMatchObject(await rest().profiles());
    const w = (await rest().spawn({})).body;
    const [viaRest, viaMcp] = [await rest().status(w.sessionId), await mcp().status(w.sessionId)];
    expect(viaMcp).toMatchObject(viaRest);
    expect(viaRest.body).toMatchObject({ sessionId: w.sessionId, ready: true, state: "idle", turn: null, inbox: 0 });
    await rest().stop(w.paneId);
  });
});

describe("identity comes from the connection", () => {
  test("tools/list has the twelve fleet tools", async () => {
    const { tools } = await primary.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ["fleet_ack", "fleet_ask", "fleet_cancel", "fleet_list", "fleet_poll", "fleet_profiles", "fleet_reply", "fleet_send", "fleet_spawn", "fleet_status", "fleet_stop", "fleet_whoami"].sort(),
    );
    expect(tools.find((t) => t.name === "fleet_reply")!.inputSchema.properties).not.toHaveProperty("target");
  });

  test("no credential, or a wrong one, cannot connect (401)", async () => {
    for (const token of ["", "hw_wrong"]) {
      const err = await mcpClient(fleet.url, token).then(
        () => null,
        (e: Error) => e,
      );
      expect((err as any)?.code).toBe(401);
    }
  });

  test("fleet_whoami: the primary, or the worker the credential was minted for; a worker's credential dies with it", async () => {
    expect((await primary.tool("fleet_whoami")).body).toEqual({ principal: "primary" });
    const w = (await primary.tool("fleet_spawn", { profile: "stand-in-mcp", role: "reviewer" })).body;
    const token = (await fleet.standIn(w.sessionId)).env.HERD_TOKEN!;
    const worker = await mcpClient(fleet.url, token);
    expect((await worker.tool("fleet_whoami")).body).toEqual({ principal: "member", sessionId: w.sessionId, role: "reviewer", paneId: w.paneId, profile: "stand-in-mcp" });
    // No argument names the session: one that tries is refused, and a worker may not send.
    const named = await worker.tool("fleet_reply", { content: "x", target: "w-000000000000" });
    expect([named.isError, named.status, named.body.error]).toEqual([true, 400, "bad_request"]);
    expect(named.body.detail).toContain("target");
    expect((await worker.tool("fleet_send", { target: w.sessionId, content: "reply x" })).status).toBe(403);
    // The primary is no worker: it has no session to reply for.
    expect((await primary.tool("fleet_reply", { content: "x" })).status).toBe(403);
    // The stand-in over MCP tries it mid-turn, and says what herd answered.
    expect((await primary.tool("fleet_send", { target: w.sessionId, content: `reply-as w-000000000000 hijack` })).body.reply).toBe("reply-as status 400 bad_request");
    await worker.close();
    expect((await primary.tool("fleet_stop", { paneId: w.paneId })).status).toBe(204);
    expect(((await mcpClient(fleet.url, token).then(() => null, (e: Error) => e)) as any)?.code).toBe(401);
  });

  test("fleet_poll with target and peek keeps the replies for fleet_ack, which drops one by msgId", async () => {
    const w = (await primary.tool("fleet_spawn", { profile: "stand-in-mcp" })).body;
    for (const [i, words] of ["one", "two"].entries()) {
      await primary.tool("fleet_send", { target: w.sessionId, content: `late 200 ${words}`, timeoutMs: 1 });
      await eventually(async () => (await primary.tool("fleet_status", { target: w.sessionId })).body.inbox === i + 1, 10_000, "the late reply");
    }
    const peeked = (await primary.tool("fleet_poll", { target: w.sessionId, peek: true })).body.replies;
    expect(peeked.map((r: any) => r.content)).toEqual(["one", "two"]);
    expect((await primary.tool("fleet_ack", { target: w.sessionId, msgId: peeked[0].msgId })).body).toEqual({ sessionId: w.sessionId, msgId: peeked[0].msgId, acked: true });
    expect((await primary.tool("fleet_ack", { target: w.sessionId, msgId: peeked[0].msgId })).body.acked).toBe(false);
    expect((await primary.tool("fleet_poll", { target: w.sessionId })).body.replies.map((r: any) => r.content)).toEqual(["two"]);
    const neither = await primary.tool("fleet_poll", {});
    expect([neither.status, neither.body.error]).toEqual([400, "bad_request"]);
    await primary.tool("fleet_stop", { paneId: w.paneId });
  });
});
