// Every command README.md and docs/*.md print (test/doc-commands.ts reads them from
// the text) is run by a test as printed, or is listed below with the reason no
// test here can run it. This file runs those no other test does: each line goes
// to `sh -c` as printed, with `herd` on the PATH (this checkout's CLI) and a
// fresh HOME; only the router's port in a line is the test's (DOC_ROUTER). The
// demo fleet's nodes take the ports the README gives them (:11501-11503).
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { atRouter, docCommands, printed, runLine, startLine } from "./doc-commands.ts";
import { CLI, eventually, freePorts, getJson, ROOT, spawnHerd, tmpDir } from "./helpers.ts";

/** Run by another test, as printed (or, for a mode it names, as that test's argv). */
const ELSEWHERE: Record<string, string> = {
  "ANTHROPIC_BASE_URL=http://localhost:11435 ANTHROPIC_AUTH_TOKEN=herd claude": "test/clients-claude-code.test.ts",
  "claude -p": "test/clients-claude-code.test.ts",
  "CODEX_OSS_BASE_URL=http://localhost:11435/v1 codex --oss --local-provider ollama": "test/clients-codex.test.ts",
  'codex exec --skip-git-repo-check "Name three herd animals"': "test/clients-codex.test.ts",
  "codex --oss": "test/clients-codex.test.ts",
  "codex exec": "test/clients-codex.test.ts",
  "codex exec --oss": "test/clients-codex.test.ts",
  "codex exec --json -s workspace-write": "test/clients-codex.test.ts",
  "codex exec --oss --local-provider ollama": "test/clients-codex.test.ts",
  "chmod +x ./herd": "test/binary.test.ts",
  "./herd init": "test/binary.test.ts",
  "./herd check-config herd.config.ts": "test/binary.test.ts",
  "./herd": "test/binary.test.ts",
  "./herd --host 0.0.0.0": "test/binary.test.ts",
  "./herd service install": "test/service.test.ts",
  "herd service install --config ~/herd-fleet/live/herd.config.ts": "test/service.test.ts",
  "herd service install --daemon --agent-only --config ~/herd-fleet/live/herd.config.ts --router http://studio.local:11435": "test/service.test.ts",
  "herd service status": "test/service.test.ts",
  "herd service uninstall": "test/service.test.ts",
  "herd plan": "test/gitops.test.ts",
  "herd sim --mlx": "test/mlx.test.ts",
  "herd sim --mlx --mlx-lm-version 0.31.2": "test/sim-cli.test.ts",
  "herd sim-mlx-server --help": "test/sim-cli.test.ts",
  'curl http://localhost:11435/api/transcribe -F "audio=@recording.wav"': "test/transcription.test.ts",
  'curl -s -X POST -H "Authorization: Bearer $HERD_TOKEN" -d \'{"turnDone":true}\' "$HERD_URL/sessions/$HERD_SESSION_ID/reply"': "test/agents.test.ts",
  "npm run compile": ".ci/run",
};

const BENCH = "a benchmark: minutes of load, and figures to read rather than a result to check (.ci/run does not run it either)";
const FORM = "a command's name or its form with placeholders, not a line to run";
const MAC = "macOS only (launchctl, Gatekeeper's quarantine attribute)";

/** What no test here can run, and why. */
const CANNOT: Record<string, string> = {
  "npm install && npm start": "npm install needs the registry and rewrites node_modules (.ci/run runs it); `npm start` is run here",
  "npm install && npm test": "npm install needs the registry and rewrites node_modules; .ci/run runs both",
  "npm install": "needs the registry and rewrites node_modules (.ci/run runs it)",
  "npm test": "the whole suite, this test among it (.ci/run runs it)",
  "npm run clients:update": "asks the registry for every client's newest release and rewrites package.json",
  "xattr -d com.apple.quarantine ./herd": MAC,
  "xattr -d com.apple.quarantine ~/bin/herd": MAC,
  "launchctl setenv OLLAMA_HOST 0.0.0.0": MAC,
  "launchctl kickstart -k gui/$(id -u)/herd.router": MAC,
  "sudo launchctl kickstart -k system/herd.node": MAC,
  "./herd node --router http://studio.local:11435": "reaches a router on another Mac (studio.local) over the network",
  "curl http://mini.local:11434/api/version": "reaches another Mac's Ollama over the network",
  "git clone git@example.com:you/herd-fleet.git ~/herd-fleet": "clones over the network (the rollout test here clones a local repository instead)",
  "OLLAMA_HOST=0.0.0.0 ollama serve": "a real Ollama, which no test machine has",
  "crontab -e": "opens an editor on the user's crontab",
  "codex app-server": "names a process Codex starts, not a command to type",
  "herd node": FORM,
  "herd check-config": FORM,
  "herd check-config FILE": FORM,
  "herd plan [FILE] [--router URL]": FORM,
  "herd plan FILE --router URL": FORM,
  "herd sim-mlx-server --model M --port P --host H": FORM,
  "herd service": FORM,
  "npm run bench": BENCH,
  "npm run bench -- binary": BENCH,
  "npm run bench -- telemetry": BENCH,
  "npm run bench -- routing": BENCH,
  "HERD_BENCH_FLEETS=random npm run bench -- routing": BENCH,
  "HERD_BENCH_FLEETS=fixed npm run bench -- routing": BENCH,
  "npm run bench -- load": BENCH,
  "npm run bench -- overhead": BENCH,
  "npm run bench -- overhead client": BENCH,
  "npm run bench -- overhead client load": BENCH,
  "npm run bench -- overhead routing": BENCH,
};

/** Run in this file. */
const HERE = [
  "npm start",
  "npm start -- sim",
  "herd sim",
  "curl localhost:11435/fleet/status",
  `curl localhost:11435/api/chat -d '{"model":"llama3.2:3b","messages":[{"role":"user","content":"hello"}]}'`,
  "curl -N localhost:11435/dashboard/events",
  `curl localhost:11435/api/pull -d '{"model":"llama3.2"}'`,
  printed("docs/health.md", /^curl -X POST \$SIM\/_sim /),
  "herd --help",
  "herd --version",
  "herd schema",
  "herd init",
  "herd node --enroll --node-id mini",
  "herd node --enroll",
  "herd check-config ~/herd-fleet/herd.config.ts",
  printed("docs/rollout.md", /^#!\/bin\/sh/),
  "cp herd-new ~/bin/herd && xattr -d com.apple.quarantine ~/bin/herd 2>/dev/null; true",
  `sqlite3 ~/.herd/herd.sqlite ".backup '$HOME/herd-backup.sqlite'"`,
  "rm ~/bin/herd",
  "rm -rf ~/.herd",
  "rm -rf ~/Library/Logs/herd",
];

test("every command in the README and docs/*.md is run by a test, or says why none can; each listed one is still in the docs", () => {
  const printedAll = new Set(docCommands().map((c) => c.command));
  const listed = [...Object.keys(ELSEWHERE), ...Object.keys(CANNOT), ...HERE];
  const unaccounted = [...printedAll].filter((c) => !listed.includes(c));
  expect(unaccounted, "commands the docs print that nothing runs or explains: run each in a test, or add it to CANNOT with why").toEqual([]);
  expect(listed.filter((c) => !printedAll.has(c)), "listed here, no longer in the docs").toEqual([]);
  expect(Object.values(ELSEWHERE).filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
});

/** A fresh HOME, and a PATH whose `herd` is this checkout's CLI (as an installed herd would be). */
function userEnv(): { home: string; env: Record<string, string> } {
  const dir = tmpDir();
  const home = join(dir, "home");
  const bin = join(dir, "bin");
  mkdirSync(home);
  mkdirSync(bin);
  writeFileSync(join(bin, "herd"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(join(bin, "herd"), 0o755);
  return { home, env: { HOME: home, PATH: `${bin}:${process.env.PATH}` } };
}


describe("the README's first commands", () => {
  test("npm start on this repo's herd.config.ts starts with no Ollama on the machine, and says what it found", async () => {
    const { env } = userEnv();
    const [port] = await freePorts(1);
    const start = startLine("npm start", { env: { ...env, HERD_PORT: String(port) } });
    await start.waitFor(new RegExp(`serving on http://127\\.0\\.0\\.1:${port}`), 15_000);
    await start.waitFor(/local Ollama at http:\/\/127\.0\.0\.1:11434 /, 10_000);
    await start.stop();
  });

  test("herd --help lists every command the README names; herd --version is the package's", async () => {
    const { env } = userEnv();
    const help = await runLine("herd --help", { env });
    expect(help.code).toBe(0);
    const named = /`herd --help` lists every command: ([\s\S]*?)\. A bad flag/.exec(readFileSync(join(ROOT, "README.md"), "utf8"))![1]!;
    const commands = [...named.matchAll(/`([a-z][a-z-]*)`/g)].map((m) => m[1]!);
    expect(commands).toEqual(["serve", "node", "sim", "init", "check-config", "plan", "service", "schema", "version"]);
    for (const command of commands) expect(help.stdout, command).toMatch(new RegExp(`^  ${command} `, "m"));
    expect(await runLine("herd --version", { env })).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
  });

  test("herd schema prints the schema the repository ships; herd init writes a config that checks", async () => {
    const { home, env } = userEnv();
    const schema = await runLine("herd schema", { env });
    expect(JSON.parse(schema.stdout)).toEqual(JSON.parse(readFileSync(join(ROOT, "herd.schema.json"), "utf8")));
    const init = await runLine("herd init", { cwd: home, env });
    expect(init.code).toBe(0);
    for (const file of ["herd.config.ts", "herd.d.ts", "herd.schema.json"]) expect(existsSync(join(home, file)), file).toBe(true);
    expect((await runLine("herd check-config herd.config.ts", { cwd: home, env })).code).toBe(0);
  });
});

describe("the demo fleet (README), with the docs' curl lines against it", () => {
  test("npm start -- sim: three simulated nodes on :11501-11503 behind a router; its curl lines answer", async () => {
    const { env } = userEnv();
    const [port] = await freePorts(1);
    const sim = startLine(printed("README.md", /^npm start -- sim$/), { env: { ...env, HERD_PORT: String(port) } });
    await sim.waitFor(/try: curl/, 20_000);
    const nodes = [...sim.output().matchAll(/simulated node (\S+): (\S+)/g)].map((m) => m[2]);
    expect(nodes, "the README's comment: 3 simulated Ollama nodes on :11501-11503").toEqual(["http://127.0.0.1:11501", "http://127.0.0.1:11502", "http://127.0.0.1:11503"]);
    const router = `http://127.0.0.1:${port}`;
    const at = (pattern: RegExp, doc = "README.md") => atRouter(printed(doc, pattern), router);

    const status = await runLine(at(/^curl localhost:11435\/fleet\/status$/), { env });
    expect(JSON.parse(status.stdout).fleet).toMatchObject({ nodes_total: 3, nodes_online: 3 });
    const chat = await runLine(at(/^curl localhost:11435\/api\/chat /), { env });
    expect(chat.stdout.trim().split("\n").map((l) => JSON.parse(l)).at(-1)).toMatchObject({ done: true });

    // docs/security.md: a program's POST (curl's default form type, no Origin) works as on Ollama.
    const pull = await runLine(at(/^curl localhost:11435\/api\/pull /, "docs/security.md"), { env, timeoutMs: 30_000 });
    expect(pull.stdout.trim().split("\n").map((l) => JSON.parse(l)).at(-1)).toEqual({ status: "success" });

    // docs/dashboard.md: the dashboard's live stream, read until its first event.
    const events = startLine(at(/^curl -N localhost:11435\/dashboard\/events$/, "docs/dashboard.md"), { env });
    await events.waitFor(/^data: \{/m, 10_000);
    await events.stop();

    // docs/health.md: a simulated node's machine, set through its own route ($SIM: the node).
    const machine = await runLine(printed("docs/health.md", /^curl -X POST \$SIM\/_sim /), { env: { ...env, SIM: nodes[0]! } });
    expect(machine.code).toBe(0);
    expect((await getJson(`${nodes[0]}/_sim`)).machine).toMatchObject({ pressure: "critical", thermal: "serious", diskAvailableGb: 3 });
    await sim.stop();
  }, 60_000);

  test("herd sim (configuration.md, routing.md, rollout.md): the same fleet", async () => {
    const { env } = userEnv();
    const [port] = await freePorts(1);
    const sim = startLine("herd sim", { env: { ...env, HERD_PORT: String(port) } });
    await sim.waitFor(/try: curl/, 20_000);
    expect(await eventually(async () => (await getJson(`http://127.0.0.1:${port}/fleet/status`)).fleet.nodes_online, 5000, "3 nodes online")).toBe(3);
    await sim.stop();
  });
});

describe("security.md: herd node --enroll", () => {
  test("prints the steps the doc shows, the credential in ~/.herd/nodes (0600); without --node-id, for this host", async () => {
    const { home, env } = userEnv();
    const r = await runLine("herd node --enroll --node-id mini", { env });
    expect(r.code).toBe(0);
    // The doc's session: its command, then what it printed, cut at "…".
    const session = /^\$ herd node --enroll --node-id mini\n([\s\S]*?)\n…$/m.exec(readFileSync(join(ROOT, "docs/security.md"), "utf8"))![1]!.split("\n");
    const out = r.stdout.split("\n");
    const at = session.map((line) => out.indexOf(line));
    expect(at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1]!)), `the doc's lines, in order, in:\n${r.stdout}`).toBe(true);
    const token = join(home, ".herd/nodes/mini.token");
    expect(readFileSync(token, "utf8").trim()).toMatch(/^[\w-]{43}$/);
    const own = await runLine("herd node --enroll", { env });
    expect(own.stdout).toStartWith(`node credential for "${execFileSync("hostname").toString().trim().replace(/\.local$/, "")}" made in ~/.herd/nodes/`);
  });
});

describe("rollout.md on one machine: check, pull and swap, upgrade, back up, remove", () => {
  test("the pull script swaps in a commit that checks and keeps the live config on one that does not; the backup opens; the removal leaves nothing", async () => {
    const { home, env } = userEnv();
    const git = (cwd: string, ...args: string[]) => execFileSync("git", ["-c", "user.name=ops", "-c", "user.email=ops@herd", ...args], { cwd, env: { ...process.env, HOME: home } }).toString();
    // ~/herd-fleet: a clone (of a local repository, not the network), its main file importing the nodes.
    const origin = join(home, "origin");
    mkdirSync(origin);
    git(origin, "init", "-q", "-b", "main");
    writeFileSync(join(origin, "nodes.ts"), `export const nodes = [{ id: "studio", ollama: "http://127.0.0.1:9" }];\n`);
    writeFileSync(join(origin, "herd.config.ts"), `import { nodes } from "./nodes.ts";\nexport default { nodes };\n`);
    git(origin, "add", ".");
    git(origin, "commit", "-qm", "fleet");
    git(home, "clone", "-q", origin, "herd-fleet");
    // ~/bin/herd: the installed binary, as the doc has it.
    mkdirSync(join(home, "bin"));
    writeFileSync(join(home, "herd-new"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(home, "herd-new"), 0o755);
    const upgrade = await runLine(printed("docs/rollout.md", /^cp herd-new /), { cwd: home, env });
    expect(upgrade.code).toBe(0);
    expect((await runLine("~/bin/herd --version", { env })).stdout.trim()).toBe(pkg.version);

    expect((await runLine("herd check-config ~/herd-fleet/herd.config.ts", { env })).code).toBe(0);
    writeFileSync(join(home, "herd-fleet-pull.sh"), printed("docs/rollout.md", /^#!\/bin\/sh/));
    const pull = () => runLine("/bin/sh $HOME/herd-fleet-pull.sh", { env });
    expect(await pull()).toMatchObject({ code: 0 });
    const live = (file: string) => readFileSync(join(home, "herd-fleet/live", file), "utf8");
    expect([live("herd.config.ts"), live("nodes.ts")]).toEqual([readFileSync(join(origin, "herd.config.ts"), "utf8"), readFileSync(join(origin, "nodes.ts"), "utf8")]);
    // A broken commit: check-config stops it before it reaches live/.
    writeFileSync(join(origin, "nodes.ts"), `export const nodes = [{ id: "studio", olama: "x" }];\n`);
    git(origin, "commit", "-qam", "typo");
    const refused = await pull();
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('olama: unknown key; did you mean "ollama"?');
    expect(live("nodes.ts")).toContain("http://127.0.0.1:9");

    // A store to back up: a router that ran in ~/.herd.
    const router = spawnHerd(["serve", "--port", "0", "--host", "127.0.0.1", "--config", join(home, "herd-fleet/live/herd.config.ts")], { env: { HOME: home } });
    await router.waitFor(/serving on/);
    await router.stop();
    expect((await runLine(printed("docs/rollout.md", /^sqlite3 /), { env })).code).toBe(0);
    const backup = new Database(join(home, "herd-backup.sqlite"), { readonly: true });
    expect(backup.query("select name from sqlite_master where name = 'traces'").all()).toEqual([{ name: "traces" }]);
    backup.close();

    for (const line of ["rm ~/bin/herd", "rm -rf ~/.herd", "rm -rf ~/Library/Logs/herd"]) expect(await runLine(line, { env }), line).toMatchObject({ code: 0 });
    expect([existsSync(join(home, "bin/herd")), existsSync(join(home, ".herd"))]).toEqual([false, false]);
  }, 60_000);
});

