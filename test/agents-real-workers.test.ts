// Claude Code and Codex themselves (the pinned binaries) as fleet workers, in
// real tmux panes, on the herd's own models (a simulated node): herd's adapters
// alone make them work (no hand-written config). A lead's turn over REST or MCP
// is answered by the model calling fleet_reply over MCP; a turn that ends
// without it is answered from Claude Code's own record, not its screen; a worker
// may ask the lead mid-turn. A coding turn runs its commands under the profile's
// permissions with no dialog (Claude Code) and commits in herd's worktree (both);
// a dialog herd did not set up is reported as the turn waiting for approval; a
// turn opening with ! or / is text; a cancelled turn's answer never answers the
// next; a stopped worker leaves no folder or key behind. The workers' proxy
// variables aim at a trap: nothing may leave loopback but Codex's announcement tip,
// which no setting stops. Every wait is bounded; the fleet stops it all.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, startSimOllama } from "../src/sim/index.ts";
import { type Fleet, mcpClient, PRIMARY, startFleet, WORKERS_KEY } from "./agents-fleet.ts";
import { BIN, startTrap, type Trap } from "./clients.ts";
import { cleanupFile, eventually, tmpDir } from "./helpers.ts";

setDefaultTimeout(90_000);

let fleet: Fleet;
let sim: SimNode;
let trap: Trap;

const PROXY_VARS = ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "no_proxy", "NO_PROXY"];

afterAll(cleanupFile);
afterAll(async () => {
  await fleet?.stop();
  await sim?.stop();
});

beforeAll(async () => {
  // Claude Code asks for its large tier, where a model that calls tools (qwen3:8b) comes first; Codex's gpt-5-codex goes to the coder.
  const models = ["qwen3:8b", "llama3.2:3b", "qwen2.5-coder:7b"];
  sim = await startSimOllama({ id: "mac", models, loaded: models });
  trap = await startTrap();
  const proxies = Object.fromEntries(PROXY_VARS.map((n) => [n, n.toLowerCase() === "no_proxy" ? "127.0.0.1,localhost" : trap.url]));
  const profile = (command: string, kind: string, more: Record<string, unknown> = {}) => JSON.stringify({ command: join(BIN, command), kind, env: ["PATH", ...PROXY_VARS], clientKey: "workers", capacity: 2, ...more });
  // A coding worker: the commands of a coding turn, edits and writes, run with no prompt; anything else is refused.
  const coder = { permissions: { allow: ["Bash(node *)", "Bash(sh *)", "Bash(git *)", "Bash(curl *)", "Edit", "Write"] } };
  // A profile whose own arguments bring Claude Code's prompts back: a dialog herd did not set up.
  const asks = { args: ["--permission-mode", "default"] };
  // A worker whose herd key runs out: two requests a minute, and Claude Code told not to retry (so it fails at once).
  const tight = { clientKey: "tight", env: ["PATH", ...PROXY_VARS, "CLAUDE_CODE_MAX_RETRIES"] };
  const profiles = `claude: ${profile("claude", "claude-code")}, codex: ${profile("codex", "codex")}, coder: ${profile("claude", "claude-code", coder)}, asks: ${profile("claude", "claude-code", asks)}, tight: ${profile("claude", "claude-code", tight)},`;
  const clients = `{ name: "tight", key: "hk-tight-key-5678", rateLimit: { requestsPerMinute: 2 } },`;
  fleet = await startFleet({ nodes: `nodes: [{ id: "mac", ollama: "${sim.url}" }],`, profiles, clients, agents: "spawnTimeoutMs: 60000,", env: { ...proxies, CLAUDE_CODE_MAX_RETRIES: "0" } });
});

const spawn = async (profile = "claude") => {
  const r = await fleet.call("POST", "/members", { body: { profile } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { sessionId: string; paneId: string };
};
const send = (id: string, body: Record<string, unknown>) => fleet.call("POST", `/sessions/${id}/message`, { body: { timeoutMs: 60_000, ...body } });
const screen = async (paneId: string) => (await fleet.tmux(["capture-pane", "-p", "-t", `%${paneId.slice("pane-".length)}`])).out;

describe("Claude Code as a worker", () => {
  let w: { sessionId: string; paneId: string };

  test("spawn answers 201 once its prompt is up (onboarding, key and trust settled by herd)", async () => {
    w = await spawn();
    expect(await screen(w.paneId)).toMatch(/─{20,}\n❯/);
    expect((await fleet.call("GET", `/sessions/${w.sessionId}/status`)).body).toMatchObject({ state: "idle", ready: true });
  });

  test("a turn over REST: the model calls fleet_reply over MCP → 200 replySource reply with its answer", async () => {
    const r = await send(w.sessionId, { content: 'Answer over the fleet.\nsim: call mcp__herd__fleet_reply {"content":"queues are FIFO"}' });
    expect([r.status, r.body], await screen(w.paneId)).toEqual([200, { sessionId: w.sessionId, reply: "queues are FIFO", replySource: "reply" }]);
  });

  test("a turn that ends without fleet_reply: the Stop hook says so at once, the answer comes from the transcript, not the screen", async () => {
    const r = await send(w.sessionId, { content: "Explain backpressure" });
    expect([r.status, r.body.replySource], await screen(w.paneId)).toEqual([200, "transcript"]);
    expect(r.body.reply).toContain("backpressure");
    expect(r.body.reply).not.toMatch(/❯|esc to interrupt|shift\+tab|Claude Code v/);
  });

  test("a worker that asks mid-turn (fleet_ask): the lead gets the question, its answer reaches the model and comes back in the reply", async () => {
    const content = 'sim: call mcp__herd__fleet_ask {"question":"Which branch?"}\nsim: call mcp__herd__fleet_reply {"content":"lead said {{tool_result}}"}';
    const q = await send(w.sessionId, { content });
    expect([q.status, q.body.status, q.body.question], await screen(w.paneId)).toEqual([202, "question", "Which branch?"]);
    const r = await send(w.sessionId, { content: "release-7", turnId: q.body.turnId });
    expect([r.status, r.body.replySource]).toEqual([200, "reply"]);
    expect(r.body.reply).toStartWith("lead said ");
    expect(r.body.reply).toContain("release-7");
  });

  test("a turn over MCP (fleet_send): the same 200 reply", async () => {
    const lead = await mcpClient(fleet.url, PRIMARY);
    try {
      const r = await lead.tool("fleet_send", { target: w.sessionId, content: 'sim: call mcp__herd__fleet_reply {"content":"over MCP"}', timeoutMs: 60_000 });
      expect([r.status, r.body]).toEqual([200, { sessionId: w.sessionId, reply: "over MCP", replySource: "reply" }]);
    } finally {
      await lead.close();
    }
  });

  test("nothing left loopback; DELETE ends Claude Code and its pane", async () => {
    expect(trap.seen).toEqual([]);
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
    await eventually(async () => !(await fleet.tmux(["list-panes", "-a", "-F", "#{pane_id}"])).out.includes(`%${w.paneId.slice(5)}`), 10_000, "the pane to go");
  });
});

describe("Codex as a worker", () => {
  let w: { sessionId: string; paneId: string };

  test("spawn answers 201 at its composer: no sign-in screen (an API-key provider at herd's Responses surface)", async () => {
    w = await spawn("codex");
    const shown = await screen(w.paneId);
    expect(shown).toMatch(/^› /m);
    expect(shown).not.toMatch(/sign in/i);
  });

  test("a turn over REST: the model calls fleet_reply over MCP → 200 replySource reply", async () => {
    const r = await send(w.sessionId, { content: 'sim: call fleet_reply {"content":"from codex"}' });
    expect([r.status, r.body], await screen(w.paneId)).toEqual([200, { sessionId: w.sessionId, reply: "from codex", replySource: "reply" }]);
  });

  test("a turn that ends without fleet_reply: the notify hook says so, the answer is Codex's last message, not its screen", async () => {
    const r = await send(w.sessionId, { content: "Explain backpressure" });
    expect([r.status, r.body.replySource], await screen(w.paneId)).toEqual([200, "transcript"]);
    expect(r.body.reply).toContain("backpressure");
    expect(r.body.reply).not.toMatch(/›|for shortcuts|OpenAI Codex|Worked for/);
  });

  test("nothing left loopback but its announcement tip; DELETE leaves no Codex process behind (no detached app-server daemon)", async () => {
    // The TUI fetches its announcement tip from github at every start, whatever its config says (tooltips::announcement::prewarm).
    expect(trap.seen.filter((line) => line !== "CONNECT raw.githubusercontent.com:443 HTTP/1.1")).toEqual([]);
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
    const left = () => Bun.spawnSync(["pgrep", "-f", `${fleet.dir}/data/workers`]).stdout.toString().trim();
    await eventually(async () => left() === "", 10_000, "every process run from the worker's folder to end");
  });
});

describe("Codex as a worker in a worktree per ticket", () => {
  // Codex's edits go through its apply_patch helper, run by exec_command like any command (codex-rs, rust-v0.171.0).
  const patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: README.md\n@@\n-draft\n+final\n*** End Patch\nEOF";
  const steps = [
    { cmd: "echo built > build.txt" },
    { cmd: patch },
    { cmd: "git add -A && git commit -q -m 'T-7: build and readme' && git log -1 --format=%s" },
  ].map((args) => `sim: call exec_command ${JSON.stringify(args)}`);

  test("a coding turn in herd's worktree: a command writes a file, an edit, a commit, fleet_reply; the commit is in the repository", async () => {
    const repo = join(fleet.dir, "repo");
    const git = (...args: string[]) => Bun.spawnSync(["git", ...args], { cwd: repo, stdout: "pipe", stderr: "pipe" }).stdout.toString().trim();
    mkdirSync(repo);
    git("init", "-q");
    git("config", "user.email", "worker@example.com");
    git("config", "user.name", "worker");
    writeFileSync(join(repo, "README.md"), "draft\n");
    git("add", "README.md");
    git("commit", "-q", "-m", "start");
    const r = await fleet.call("POST", "/members", { body: { profile: "codex", cwd: repo, worktree: true, ticket: "T-7" } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const w = r.body as { sessionId: string; paneId: string; worktree: string };
    const content = [...steps, 'sim: call fleet_reply {"content":"done: {{tool_result}}"}'].join("\n");
    const turn = await send(w.sessionId, { content, timeoutMs: 120_000 });
    expect([turn.status, turn.body.reply], await screen(w.paneId)).toEqual([200, expect.stringContaining("T-7: build and readme")]);
    expect(git("log", "-1", "--format=%s", "herd/T-7")).toBe("T-7: build and readme");
    expect(git("show", "--name-only", "--format=", "herd/T-7").split("\n").sort()).toEqual(["README.md", "build.txt"]);
    expect(git("show", "herd/T-7:README.md")).toBe("final");
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  }, 180_000);
});

describe("Codex's start with every proxy variable aimed at the trap", () => {
  // The one fetch no setting stops: the TUI's announcement tip (codex-rs/tui/src/lib.rs run_ratatui_app calls
  // tooltips::announcement::prewarm, which GETs raw.githubusercontent.com/openai/codex/main/announcement_tip.toml; rust-v0.171.0).
  const TIP = "CONNECT raw.githubusercontent.com:443 HTTP/1.1";

  test("its start-up reaches outside loopback for the announcement tip alone: no update check, analytics, metrics, plugins or model list", async () => {
    const before = trap.seen.length;
    const w = await spawn("codex");
    // The tip's fetch is the proof that Codex's client honours the proxy variables; a turn then lets any later start-up fetch happen.
    await eventually(async () => trap.seen.slice(before).includes(TIP), 15_000, "Codex's announcement fetch to reach the trap");
    const r = await send(w.sessionId, { content: 'sim: call fleet_reply {"content":"offline"}' });
    expect([r.status, r.body.reply], await screen(w.paneId)).toEqual([200, "offline"]);
    expect(trap.seen.slice(before)).toEqual([TIP]);
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  });
});

// Issue 28, item 2: a cancel in the middle of a long turn interrupts the agent itself (not only herd's wait), so the
// cancelled turn's answer never answers the next one. Long: the model's answer held back 8 s by the sim, or a question to the lead that nobody answers.
// (Codex folds a turn typed mid-turn into the running one, where the sim follows the newest prompt: its cases pass without the interrupt too.)
describe("a cancelled turn's answer is never the next turn's reply", () => {
  /** A poll the sim's hold delayed may find the node unreachable when it ends: once the hold is over, the node is back. */
  const nodeBack = async (heldUntil: number) => {
    await Bun.sleep(Math.max(0, heldUntil - Date.now()) + 500);
    const online = async () => ((await (await fetch(`${fleet.url}/fleet/status`, { headers: { authorization: `Bearer ${WORKERS_KEY}` } })).json()) as any).nodes.every((n: any) => n.status === "online" && !n.excluded);
    await eventually(online, 20_000, "the node back");
  };
  const longTurns = {
    "a slow model": { faults: { firstByteDelayMs: 8000 }, steps: (reply: string) => `sim: call ${reply} {"content":"T1 result: the build passed"}`, status: "working" },
    "an unanswered question": { faults: {}, steps: (reply: string) => `sim: call ${reply.replace("reply", "ask")} {"question":"Which branch?"}\nsim: call ${reply} {"content":"T1 result: the build passed"}`, status: "question" },
  };
  for (const [profile, tool] of [["claude", "mcp__herd__fleet_reply"], ["codex", "fleet_reply"]] as const) {
    for (const [long, { faults, steps, status }] of Object.entries(longTurns)) {
      test(`${profile}: cancel mid-turn (${long}), then a new turn: its reply is its own`, async () => {
        let heldUntil = 0;
        const w = await spawn(profile);
        try {
          sim.setFaults(faults);
          const first = await send(w.sessionId, { content: `Run the build.\n${steps(tool)}`, timeoutMs: 3000 });
          sim.setFaults({}); // the request in flight keeps its hold; herd's probes of the node must not wait (it would go offline)
          // A probe that came while the fault was on is held as long: until then the node may yet be found unreachable.
          heldUntil = Date.now() + ((faults as { firstByteDelayMs?: number }).firstByteDelayMs ?? 0);
          expect([first.status, first.body.status], `${first.body.detail}\n${await screen(w.paneId)}`).toEqual([202, status]);
          const cancel = await fleet.call("POST", `/sessions/${w.sessionId}/cancel`);
          expect([cancel.status, cancel.body.cancelled]).toEqual([200, true]);
          await nodeBack(heldUntil); // the old turn's answer gets all the time it could take, and the new one a node
          const next = await send(w.sessionId, { content: `What is the capital of France?\nsim: call ${tool} {"content":"Paris"}` });
          expect([next.status, next.body.reply], await screen(w.paneId)).toEqual([200, "Paris"]);
        } finally {
          sim.setFaults({});
          await fleet.call("DELETE", `/members/${w.paneId}`);
          await nodeBack(heldUntil);
        }
      });
    }
  }
});

/** A git repository with one commit, README.md saying "old". */
function gitRepo(): string {
  const repo = tmpDir();
  const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=lead", "-c", "user.email=lead@herd", ...args], { cwd: repo });
  git("init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "old\n");
  git("add", "README.md");
  git("commit", "-qm", "init");
  return repo;
}
const call = (tool: string, args: Record<string, unknown>) => `sim: call ${tool} ${JSON.stringify(args)}`;

describe("Claude Code: a coding turn under the profile's permissions", () => {
  test("in a worktree: a command writes a file, an edit, a commit, a loopback curl, fleet_reply: no dialog on the way", async () => {
    const repo = gitRepo();
    const r = await fleet.call("POST", "/members", { body: { profile: "coder", cwd: repo, worktree: true, ticket: "t-28" } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const w = r.body as { sessionId: string; paneId: string; worktree: string };
    const readme = join(w.worktree, "README.md");
    const content = [
      call("Bash", { command: `node -e "require('fs').writeFileSync('out.txt', 'from node\\n')"` }),
      call("Bash", { command: `sh -c "echo from sh >> out.txt"` }),
      call("Read", { file_path: readme }),
      call("Edit", { file_path: readme, old_string: "old", new_string: "new" }),
      call("Bash", { command: "git -c user.name=worker -c user.email=worker@herd commit -qam 'worker: README says new'" }),
      call("Bash", { command: `curl -s -o /dev/null -w 'healthz %{http_code}' ${fleet.url}/healthz` }),
      call("mcp__herd__fleet_reply", { content: "done: {{tool_result}}" }),
    ].join("\n");
    const sent = await send(w.sessionId, { content });
    expect([sent.status, sent.body.replySource], await screen(w.paneId)).toEqual([200, "reply"]);
    expect(sent.body.reply).toStartWith("done: ");
    expect(sent.body.reply).toEndWith("healthz 200"); // curl's answer from herd (a shell's start-up noise may come before it)
    expect(readFileSync(join(w.worktree, "out.txt"), "utf8")).toBe("from node\nfrom sh\n");
    expect(readFileSync(readme, "utf8")).toBe("new\n");
    expect(execFileSync("git", ["log", "-1", "--format=%s", "herd/t-28"], { cwd: repo }).toString().trim()).toBe("worker: README says new");
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  });

  test("a call no rule allows is refused to the model, not asked: the turn still ends", async () => {
    const w = await spawn("coder");
    const content = [call("Bash", { command: "rm -rf /tmp/not-allowed" }), call("mcp__herd__fleet_reply", { content: "after {{tool_result}}" })].join("\n");
    const r = await send(w.sessionId, { content });
    expect([r.status, r.body.replySource], await screen(w.paneId)).toEqual([200, "reply"]);
    expect(r.body.reply).toStartWith("after ");
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  });
});

describe("Claude Code: a dialog herd did not set up", () => {
  test("the turn is reported waiting for approval, with the screen's question, over REST and MCP, not working", async () => {
    const w = await spawn("asks");
    const content = [call("Bash", { command: "node -e 1" }), call("mcp__herd__fleet_reply", { content: "ran" })].join("\n");
    const r = await send(w.sessionId, { content });
    expect([r.status, r.body.status, r.body.question], await screen(w.paneId)).toEqual([202, "awaiting_approval", "Do you want to proceed?"]);
    expect(r.body.dialog).toContain("node -e 1");
    const status = await fleet.call("GET", `/sessions/${w.sessionId}/status`);
    expect(status.body.turn).toMatchObject({ phase: "awaiting_approval", approval: { question: "Do you want to proceed?" } });
    const lead = await mcpClient(fleet.url, PRIMARY);
    try {
      expect((await lead.tool("fleet_status", { target: w.sessionId })).body.turn.phase).toBe("awaiting_approval");
    } finally {
      await lead.close();
    }
    expect((await fleet.call("POST", `/sessions/${w.sessionId}/cancel`)).status).toBe(200);
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  });

  test("an async turn's task is awaiting_approval with the question", async () => {
    const w = await spawn("asks");
    const content = [call("Bash", { command: "sh -c true" }), call("mcp__herd__fleet_reply", { content: "ran" })].join("\n");
    const { body } = await send(w.sessionId, { content, wait: false });
    const task = await eventually(async () => {
      const t = await fleet.call("GET", `/tasks/${body.ticket}`);
      return t.body.phase === "awaiting_approval" && t.body;
    }, 60_000, "the task to await approval");
    expect(task.question).toBe("Do you want to proceed?");
    expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
  });
});

describe("turns that start with ! or / reach the model as text", () => {
  for (const profile of ["claude", "codex"]) {
    test(`${profile}: "!touch bang.txt" runs nothing, "/exit" ends nothing: the model answers both`, async () => {
      const cwd = tmpDir();
      const r = await fleet.call("POST", "/members", { body: { profile, cwd } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const w = r.body as { sessionId: string; paneId: string };
      const bang = await send(w.sessionId, { content: "!touch bang.txt" });
      // The sim answers about the prompt's first six words: the model got the turn's text (herd's lead line first, and
      // Claude Code's own mark before a pasted turn of several lines may take the rest of the six).
      expect([bang.status, bang.body.replySource], await screen(w.paneId)).toEqual([200, "transcript"]);
      expect(bang.body.reply).toMatch(/touch bang txt|Your lead's/);
      expect(existsSync(join(cwd, "bang.txt"))).toBe(false);
      const exit = await send(w.sessionId, { content: "/exit" });
      expect([exit.status, exit.body.replySource], await screen(w.paneId)).toEqual([200, "transcript"]);
      expect(exit.body.reply).toMatch(/exit|Your lead's/);
      expect((await fleet.call("GET", `/sessions/${w.sessionId}/status`)).body).toMatchObject({ state: "idle", liveStatus: "running" });
      expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
    });
  }
});

describe("stopped workers leave no folder and no part of a key", () => {
  test("spawn-and-delete cycles: each worker's folder is gone after its delete, and nothing in the data dir holds the key's tail", async () => {
    const workers = join(fleet.dir, "data", "workers");
    for (let i = 0; i < 3; i++) {
      const w = await spawn();
      const r = await send(w.sessionId, { content: "Explain queues" });
      expect(r.status).toBe(200);
      expect((await fleet.call("DELETE", `/members/${w.paneId}`)).status).toBe(204);
      // A dying Claude Code writes its config on its way out: give it the time it would take.
      await Bun.sleep(1500);
      expect(readdirSync(workers)).not.toContain(w.sessionId);
    }
    // Claude Code kept the last 20 characters of a key it approved; any 10 of them would be too many.
    const grep = Bun.spawnSync(["grep", "-rl", "--", WORKERS_KEY.slice(-10), join(fleet.dir, "data")]);
    expect(grep.stdout.toString()).toBe("");
  });
});

describe("a worker whose model credential runs out", () => {
  // Claude Code's StopFailure hook (2.1.332) names the API error a turn ended on; herd's 429 for the key's rate limit is its rate_limit.
  test("Claude Code: the turn its key's rate limit ends is 202 backend_exhausted at once, not working until it expires", async () => {
    const w = await spawn("tight");
    try {
      let last: { status: number; body: any } | undefined;
      for (let i = 0; i < 4 && last?.body.status !== "backend_exhausted"; i++) last = await send(w.sessionId, { content: `Explain queues, part ${i + 1}`, timeoutMs: 30_000 });
      expect([last!.status, last!.body.status], await screen(w.paneId)).toEqual([202, "backend_exhausted"]);
      expect(last!.body.detail).toContain("rate_limit");
      expect((await fleet.call("GET", `/sessions/${w.sessionId}/status`)).body).toMatchObject({ state: "idle" });
    } finally {
      await fleet.call("DELETE", `/members/${w.paneId}`);
    }
  });
});
