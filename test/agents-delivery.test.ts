// Getting a worker going and a turn to it: a spawn answers 201 only once the
// worker's adapter sees it ready (else 502 with its last output), turns reach a
// line-reading worker whole whatever their size (a cooked tty would cut a line
// at 4095 bytes) with control characters neutralised (a raw ^C would SIGINT
// it), and an exited worker's last screen stays in the roster.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type Fleet, startFleet } from "./agents-fleet.ts";
import { cleanupFile, eventually } from "./helpers.ts";

setDefaultTimeout(30_000);

let fleet: Fleet;
afterAll(cleanupFile);
afterAll(() => fleet?.stop());

// A "claude-code" profile whose command never shows Claude Code's prompt: it stays starting, or exits at once.
const sh = (script: string) => JSON.stringify({ command: "/bin/sh", args: ["-c", script], kind: "claude-code", capacity: 2 });

beforeAll(async () => {
  fleet = await startFleet({
    profiles: `"never-ready": ${sh("echo still loading; sleep 60")}, "dies": ${sh("echo onboarding check failed; exit 1")},`,
    agents: "spawnTimeoutMs: 1500,",
  });
});

const spawn = (profile?: string) => fleet.call("POST", "/members", { body: profile ? { profile } : {} });
const send = (id: string, content: string) => fleet.call("POST", `/sessions/${id}/message`, { body: { content, timeoutMs: 60_000 } });
const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

test("a worker that never shows its ready sign: 502 spawn_timeout with its last output, and no pane left", async () => {
  const r = await spawn("never-ready");
  expect([r.status, r.body.error]).toEqual([502, "spawn_timeout"]);
  expect(r.body.lastOutput).toContain("still loading");
  expect((await fleet.call("GET", "/members")).body.workers.filter((w: any) => w.profile === "never-ready")).toEqual([]);
  expect((await fleet.tmux(["list-panes", "-a", "-F", "#{pane_current_command}"])).out).not.toContain("sleep");
});

test("a worker that exits before it is ready: 502 spawn_failed with its exit status and last screen", async () => {
  const r = await spawn("dies");
  expect([r.status, r.body.error]).toEqual([502, "spawn_failed"]);
  expect(r.body.detail).toContain("status 1");
  expect(r.body.lastOutput).toContain("onboarding check failed");
});

test("a 2 MB one-line turn reaches a line-reading worker whole", async () => {
  const id = (await spawn()).body.sessionId;
  const big = "x".repeat(2 * 1024 * 1024);
  const r = await send(id, `measure ${big}`);
  expect(r.status).toBe(200);
  expect(r.body.reply).toBe(`${big.length} ${sha256(big)}`);
  await fleet.call("DELETE", `/members/${(await fleet.call("GET", `/sessions/${id}/status`)).body.paneId}`);
});

test("control bytes in a turn are neutralised: ^C does not kill the worker, ^D does not end its input, ESC does not end the paste", async () => {
  const id = (await spawn()).body.sessionId;
  const r = await send(id, "reply a\u0003b\u0004c\u001b[201~d\u0007e");
  expect([r.status, r.body.reply]).toEqual([200, "a␃b␄c␛[201~d␇e"]);
  const after = await send(id, "reply still here");
  expect([after.status, after.body.reply]).toEqual([200, "still here"]);
});

test("an exited worker's last screen stays in the roster", async () => {
  const id = (await spawn()).body.sessionId;
  await send(id, "exit 3");
  const gone = await eventually(async () => (await fleet.call("GET", "/members")).body.workers.find((w: any) => w.sessionId === id && w.state === "exited"), 10_000, "the worker to exit");
  expect(gone.exitStatus).toBe(3);
  expect(gone.lastOutput).toContain(`stand-in ${id} ready`);
});
