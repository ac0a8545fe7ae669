// `herd service`: the LaunchAgent that starts herd at login, or the LaunchDaemon that starts it at boot.
// launchctl is macOS's, so here the CLI's --dry-run is what is seen: the plist is read back field by
// field, and the command it holds is run (src/commands/service.test.ts drives launchctl's recorded
// answers through the command's runner).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getJson, herd, ROOT, spawnHerd, tmpDir } from "./helpers.ts";
import { parsePlist } from "./plist.ts";

function setup() {
  const home = tmpDir();
  const dir = tmpDir();
  const config = join(dir, "herd.config.ts");
  writeFileSync(config, `export default { nodes: [] };\n`);
  return { home, dir, config, env: { HOME: home } };
}

describe("herd service", () => {
  test("install --dry-run prints the router's LaunchAgent: its command with the config's absolute path, run at login, kept alive, logs in ~/Library/Logs/herd", async () => {
    const { home, dir, config, env } = setup();
    const r = await herd(["service", "install", "--dry-run", "--node-id", "mini", "--data-dir", "data", "--port", "0", "--host", "127.0.0.1"], { cwd: dir, env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`would write ${join(home, "Library", "LaunchAgents", "herd.router.plist")}`);
    const plist = parsePlist(r.stdout) as Record<string, any>;
    const log = join(home, "Library", "Logs", "herd", "herd.router.log");
    expect(plist).toMatchObject({ Label: "herd.router", WorkingDirectory: dir, RunAtLoad: true, KeepAlive: { SuccessfulExit: false }, StandardOutPath: log, StandardErrorPath: log });
    expect(plist.EnvironmentVariables.PATH).toBe(process.env.PATH);
    const args: string[] = plist.ProgramArguments;
    expect(args.slice(-10)).toEqual(["--config", config, "--node-id", "mini", "--data-dir", join(dir, "data"), "--port", "0", "--host", "127.0.0.1"]);
    // A dry run writes nothing.
    expect(existsSync(join(home, "Library"))).toBe(false);

    // The command it holds is a working herd: run from elsewhere, it serves with that config and data dir.
    const command = args.slice(0, -10);
    const running = spawnHerd(args.slice(command.length), { cwd: tmpDir(), env, bin: command.length === 1 ? command[0] : undefined });
    const [, url] = await running.waitFor(/serving on (http:\/\/[\d.]+:\d+)/);
    expect((await getJson(`${url}/fleet/status`)).config.path).toBe(config);
    await running.waitFor(/store: /);
    expect(running.output()).toContain(`store: ${join(dir, "data", "herd.sqlite")}`);
    expect(await running.stop()).toBe(0);
  });

  test("--agent-only is the node agent: its router, credential file and config; paths are XML-escaped", async () => {
    const { home, dir, config, env } = setup();
    const r = await herd(["service", "install", "--dry-run", "--agent-only", "--config", config, "--router", "http://10.0.0.1:11435", "--token-file", "keys/a&b.token"], { cwd: dir, env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("a&amp;b.token");
    const plist = parsePlist(r.stdout) as Record<string, any>;
    expect(plist.Label).toBe("herd.node");
    expect(plist.StandardOutPath).toBe(join(home, "Library", "Logs", "herd", "herd.node.log"));
    expect(plist.ProgramArguments.slice(-7)).toEqual(["node", "--config", config, "--router", "http://10.0.0.1:11435", "--token-file", join(dir, "keys", "a&b.token")]);
  });

  test("the environment: PATH and the shell's HF_* and OLLAMA_* variables are kept and named on stderr; a token is left out, its value never printed", async () => {
    const { home, dir, env } = setup();
    const shell = { ...env, HF_HOME: join(home, "hf"), HF_HUB_CACHE: "/Volumes/models/hub", OLLAMA_MODELS: "/Volumes/models/ollama", OLLAMA_HOST: "0.0.0.0", HF_TOKEN: "hf_do_not_print_1" };
    const r = await herd(["service", "install", "--dry-run"], { cwd: dir, env: shell });
    expect(r.code).toBe(0);
    const kept = (parsePlist(r.stdout) as Record<string, any>).EnvironmentVariables;
    expect(kept).toMatchObject({ PATH: process.env.PATH, HF_HOME: shell.HF_HOME, HF_HUB_CACHE: shell.HF_HUB_CACHE, OLLAMA_MODELS: shell.OLLAMA_MODELS, OLLAMA_HOST: "0.0.0.0" });
    expect(kept).not.toHaveProperty("HF_TOKEN");
    expect(r.stderr).toContain(`HF_HOME=${shell.HF_HOME}, HF_HUB_CACHE=/Volumes/models/hub`);
    expect(r.stderr).toContain(`not kept: HF_TOKEN, a secret`);
    // Where the token belongs instead: huggingface_hub's token file under HF_HOME.
    expect(r.stderr).toContain(`huggingface_hub reads ${join(shell.HF_HOME, "token")}`);
    expect(r.stdout + r.stderr).not.toContain("hf_do_not_print_1");
  });

  test("--env NAME keeps that variable; a named secret is kept in the plist but shown as (set), with its file 0600", async () => {
    const { home, dir, env } = setup();
    const shell = { ...env, HERD_LOG_LEVEL: "debug", HF_TOKEN: "hf_do_not_print_2" };
    const r = await herd(["service", "install", "--dry-run", "--env", "HERD_LOG_LEVEL", "--env", "HF_TOKEN"], { cwd: dir, env: shell });
    expect(r.code).toBe(0);
    const kept = (parsePlist(r.stdout) as Record<string, any>).EnvironmentVariables;
    expect(kept).toMatchObject({ HERD_LOG_LEVEL: "debug", HF_TOKEN: "hf_do_not_print_2" });
    expect(r.stderr).toContain("HERD_LOG_LEVEL=debug, HF_TOKEN (set)");
    expect(r.stderr).toContain(`HF_TOKEN is in ${join(home, "Library", "LaunchAgents", "herd.router.plist")}, which only you can read (0600)`);
    expect(r.stderr).not.toContain("hf_do_not_print_2");
  });

  test("--daemon is the LaunchDaemon: /Library/LaunchDaemons, through sudo, run as this user and group with HOME set, the same command and logs", async () => {
    const { home, dir, config, env } = setup();
    const r = await herd(["service", "install", "--dry-run", "--daemon", "--agent-only", "--router", "http://10.0.0.1:11435"], { cwd: dir, env: { ...env, OLLAMA_HOST: "0.0.0.0" } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("herd service install would write /Library/LaunchDaemons/herd.node.plist through sudo");
    expect(r.stderr).toContain("and load it into the system domain");
    const plist = parsePlist(r.stdout) as Record<string, any>;
    const id = (flag: string) => Bun.spawnSync(["id", flag]).stdout.toString().trim();
    const log = join(home, "Library", "Logs", "herd", "herd.node.log");
    expect(plist).toMatchObject({ Label: "herd.node", UserName: id("-un"), GroupName: id("-gn"), WorkingDirectory: dir, RunAtLoad: true, KeepAlive: { SuccessfulExit: false }, StandardOutPath: log, StandardErrorPath: log });
    expect(plist.EnvironmentVariables).toMatchObject({ HOME: home, PATH: process.env.PATH, OLLAMA_HOST: "0.0.0.0" });
    expect(plist.ProgramArguments.slice(-5)).toEqual(["node", "--config", config, "--router", "http://10.0.0.1:11435"]);
    // The help says when to use it.
    expect((await herd(["service", "--help"])).stdout).toContain("--daemon          install: the LaunchDaemon instead of the LaunchAgent");
  });

  test("every `herd service install` and `status` in the README and docs/rollout.md runs as printed (install as a dry run)", async () => {
    const { home, dir, env } = setup();
    mkdirSync(join(home, "herd-fleet", "live"), { recursive: true });
    writeFileSync(join(home, "herd-fleet", "live", "herd.config.ts"), "export default {};\n");
    const commands = ["README.md", "docs/rollout.md"].flatMap((doc) =>
      [...readFileSync(join(ROOT, doc), "utf8").matchAll(/^(?:\.\/)?herd (service (?:install|status)\b[^#\n]*)/gm)].map((m) => m[1]!.trim()),
    );
    expect(commands.length).toBeGreaterThanOrEqual(4);
    expect(commands.some((c) => c.includes("--daemon"))).toBe(true);
    for (const command of commands) {
      const args = command.split(/\s+/).map((a) => a.replace(/^~/, home));
      const r = await herd(args[1] === "install" ? [...args, "--dry-run"] : args, { cwd: dir, env });
      expect([command, r.code, r.stderr.split("\n").filter((l) => l.startsWith("herd:"))]).toEqual([command, 0, []]);
    }
  });

  test.skipIf(process.platform === "darwin")("off macOS, install names the plist it would write and writes nothing; status says it does not run here", async () => {
    const { home, dir, env } = setup();
    const r = await herd(["service", "install"], { cwd: dir, env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`herd: launchctl is macOS-only: nothing written to ${join(home, "Library", "LaunchAgents", "herd.router.plist")}; \`herd service install --dry-run\` prints it`);
    expect(existsSync(join(home, "Library"))).toBe(false);
    const daemon = await herd(["service", "install", "--daemon"], { cwd: dir, env });
    expect(daemon.stderr.trim()).toBe("herd: launchctl is macOS-only: nothing written to /Library/LaunchDaemons/herd.router.plist; `herd service install --daemon --dry-run` prints it");
    const status = await herd(["service", "status", "--agent-only"], { cwd: dir, env });
    expect(status).toMatchObject({ code: 0, stdout: "herd.node: not installed; launchctl is macOS-only, so it does not run here\n" });
    expect(await herd(["service", "uninstall"], { cwd: dir, env })).toMatchObject({ code: 1, stderr: "herd: launchctl is macOS-only: there is no LaunchAgent or LaunchDaemon to remove here\n" });
  });

  test("usage errors: one line, exit 2", async () => {
    const { dir, env } = setup();
    const empty = tmpDir();
    const cases: [string[], string, string][] = [
      [["service"], dir, "service needs an action: install, uninstall, status"],
      [["service", "start"], dir, `service needs an action: install, uninstall, status, got "start"`],
      [["service", "install", "--dry-run"], empty, "service install needs a config: pass --config FILE or run it where herd.config.* is"],
      [["service", "install", "--dry-run", "--router", "http://10.0.0.1:11435"], dir, "--router is for --agent-only"],
      [["service", "install", "--dry-run", "--agent-only", "--router", "10.0.0.1"], dir, `--router: expected a URL`],
      [["service", "install", "extra"], dir, `herd service does not take "extra"`],
      [["service", "install", "--dry-run", "--config", "nowhere.ts"], dir, `--config: no file ${join(dir, "nowhere.ts")}`],
      [["service", "install", "--dry-run", "--env", "HERD_UNSET_FOR_TEST"], dir, "--env HERD_UNSET_FOR_TEST: HERD_UNSET_FOR_TEST is not set in this shell: export it, then install again"],
      [["service", "install", "--dry-run", "--env", "HF_HOME=/x"], dir, "--env HF_HOME=/x: takes a variable's name, not NAME=VALUE"],
      [["service", "install", "--dry-run", "--env", "1-bad"], dir, "--env 1-bad: expected an environment variable's name"],
      [["service", "install", "--dry-run", ...Array.from({ length: 65 }, () => ["--env", "HOME"]).flat()], dir, "--env: at most 64 names, got 65"],
      [["service", "status", "--daemon"], dir, "--daemon is for install (status finds either kind)"],
      [["service", "uninstall", "--env", "HOME"], dir, "--env is for install (uninstall finds either kind)"],
    ];
    for (const [args, cwd, message] of cases) {
      const r = await herd(args, { cwd, env });
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toContain(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
  }, 30_000);
});
