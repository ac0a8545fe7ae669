// `herd service` on a Mac, driven through its command runner: launchd answers as the real one did
// (test/fixtures/launchctl/SOURCES.md), and the plists written are read back field by field.
import { afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parsePlist } from "../../test/plist.ts";
import type { Ran } from "./launchctl.ts";
import { service, type ServiceHost, type ServiceOptions } from "./service.ts";

const FIXTURES = join(import.meta.dir, "../../test/fixtures/launchctl");

/** A recorded launchctl failure: its stderr, and its exit status as SOURCES.md gives it ("not shown": 1). */
function recorded(file: string): Ran {
  const row = readFileSync(join(FIXTURES, "SOURCES.md"), "utf8").split("\n").find((l) => l.startsWith(`| \`${file}\``));
  const exit = row!.split("|")[3]!.trim();
  return { code: /^\d+$/.test(exit) ? Number(exit) : 1, stdout: "", stderr: readFileSync(join(FIXTURES, file), "utf8") };
}

const OK: Ran = { code: 0, stdout: "", stderr: "" };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Launchd {
  /** "gui/501/herd.router", "system/herd.node" */
  loaded: Set<string>;
  /** How many `print`s a booted-out label still answers (its process exiting). */
  drain: number;
  guiLogin: boolean;
  /** Answers that replace launchd's, by the command's first words ("launchctl bootstrap"). */
  fail: Record<string, Ran>;
}

/** A Mac for uid 501 ("ada", group "staff") with a launchd that holds `state`, and what was run on it. */
function mac(state: Partial<Launchd> = {}, env: Record<string, string> = {}) {
  const home = mkdtempSync(join(tmpdir(), "herd-service-unit-"));
  dirs.push(home);
  const launchd: Launchd = { loaded: new Set(), drain: 0, guiLogin: true, fail: {}, ...state };
  const calls: string[] = [];
  const sleeps: number[] = [];
  const said: string[] = [];
  const draining = new Map<string, number>();
  const run = (argv: string[]): Ran => {
    calls.push(argv.join(" "));
    const cmd = argv[0] === "sudo" ? argv.slice(1) : argv;
    const failure = launchd.fail[cmd.slice(0, 2).join(" ")];
    if (failure) return failure;
    const [tool, verb, target] = cmd;
    if (tool === "id") return { ...OK, stdout: verb === "-un" ? "ada\n" : "staff\n" };
    if (tool === "install") {
      copyFileSync(cmd.at(-2)!, cmd.at(-1)!);
      return OK;
    }
    if (tool === "rm") {
      rmSync(cmd.at(-1)!, { force: true });
      return OK;
    }
    if (verb === "print" && target === "gui/501") return launchd.guiLogin ? OK : recorded("print-gui-domain-missing.txt");
    if (verb === "print") {
      const left = draining.get(target!);
      if (left !== undefined) {
        if (left <= 0) draining.delete(target!);
        else draining.set(target!, left - 1);
        return left > 0 ? OK : recorded("service-missing-system.txt");
      }
      return launchd.loaded.has(target!) ? OK : recorded("service-missing-system.txt");
    }
    if (verb === "bootout") {
      launchd.loaded.delete(target!);
      draining.set(target!, launchd.drain);
      return OK;
    }
    if (verb === "bootstrap") {
      launchd.loaded.add(`${target}/${basename(cmd[3]!, ".plist")}`);
      return OK;
    }
    throw new Error(`unexpected command: ${argv.join(" ")}`);
  };
  const host: ServiceHost = {
    run,
    sleep: (ms) => sleeps.push(ms),
    macOS: true,
    uid: 501,
    home,
    env: { PATH: "/opt/homebrew/bin:/usr/bin:/bin", ...env },
    daemonDir: join(home, "LaunchDaemons"),
    say: (line) => said.push(line),
  };
  mkdirSync(host.daemonDir);
  const config = join(home, "fleet", "herd.config.ts");
  const options = (o: Partial<ServiceOptions> = {}): (() => ServiceOptions) => () => ({ agentOnly: false, config, env: [], ...o });
  const agentPlist = (label = "herd.router") => join(home, "Library", "LaunchAgents", `${label}.plist`);
  const daemonPlist = (label = "herd.router") => join(host.daemonDir, `${label}.plist`);
  return { host, launchd, calls, sleeps, said, home, config, options, agentPlist, daemonPlist };
}

const agent = { agentOnly: false, daemon: false, dryRun: false };
const daemon = { ...agent, daemon: true };
const mode = (path: string) => statSync(path).mode & 0o777;
const plistAt = (path: string) => parsePlist(readFileSync(path, "utf8")) as Record<string, any>;

describe("install: a LaunchAgent", () => {
  test("with a GUI login: asks launchd for the domain first, writes the plist (0644) and loads it; says when herd runs", () => {
    const m = mac({}, { HF_HOME: "/Volumes/models/hf" });
    const lines = service("install", agent, m.options(), m.host);
    const path = m.agentPlist();
    expect(m.calls).toEqual(["launchctl print gui/501", "launchctl print system/herd.router", "launchctl print gui/501/herd.router", `launchctl bootstrap gui/501 ${path}`]);
    expect(plistAt(path)).toMatchObject({
      Label: "herd.router",
      WorkingDirectory: join(m.home, "fleet"),
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      EnvironmentVariables: { PATH: "/opt/homebrew/bin:/usr/bin:/bin", HF_HOME: "/Volumes/models/hf" },
      StandardOutPath: join(m.home, "Library", "Logs", "herd", "herd.router.log"),
    });
    expect(plistAt(path)).not.toHaveProperty("UserName");
    expect(plistAt(path).ProgramArguments.slice(-2)).toEqual(["--config", m.config]);
    expect(mode(path)).toBe(0o644);
    // launchd creates a missing log directory as root (so the job cannot write it): herd makes it first.
    expect(existsSync(join(m.home, "Library", "Logs", "herd"))).toBe(true);
    expect(lines[0]).toBe(`wrote ${path} and loaded it into gui/501: herd starts when you log in at the screen and stops at logout; on a Mac nobody logs into (a headless Mini or Studio), install with --daemon instead`);
    expect(lines).toContain("environment: PATH=/opt/homebrew/bin:/usr/bin:/bin, HF_HOME=/Volumes/models/hf");
  });

  test("with no GUI login (a headless Mac, over SSH): stops before writing anything and says to install the daemon", () => {
    const m = mac({ guiLogin: false });
    expect(() => service("install", agent, m.options(), m.host)).toThrow(
      "cannot load a LaunchAgent: there is no GUI login session (gui/501) for this user: nobody is logged in as you at the screen (an SSH login does not make one), and a LaunchAgent runs only inside one and stops at logout. Install the LaunchDaemon instead: the same command with --daemon",
    );
    expect(m.calls).toEqual(["launchctl print gui/501"]);
    expect(existsSync(m.agentPlist())).toBe(false);
  });

  test("a re-install boots the loaded label out and waits until launchd has let it go before bootstrapping (errno 5 otherwise)", () => {
    const m = mac({ loaded: new Set(["gui/501/herd.router"]), drain: 3 });
    service("install", agent, m.options(), m.host);
    const path = m.agentPlist();
    expect(m.calls.slice(2)).toEqual([
      "launchctl print gui/501/herd.router",
      "launchctl bootout gui/501/herd.router",
      ...Array(4).fill("launchctl print gui/501/herd.router"),
      `launchctl bootstrap gui/501 ${path}`,
    ]);
    expect(m.sleeps).toEqual([200, 200, 200]);
  });

  test("a label that is never let go: a bounded wait (10 s), then an error; nothing is bootstrapped", () => {
    const m = mac({ loaded: new Set(["gui/501/herd.router"]), drain: Infinity });
    expect(() => service("install", agent, m.options(), m.host)).toThrow("gui/501/herd.router is still loaded 10 s after launchctl bootout");
    expect(m.sleeps).toHaveLength(50);
    expect(m.calls.filter((c) => c.includes("bootstrap"))).toEqual([]);
  });

  test("a named secret is kept, shown as (set) and never by value, and its plist is 0600; unnamed, it is left out and said where it belongs", () => {
    const named = mac({}, { HF_TOKEN: "hf_secret_a" });
    const lines = service("install", agent, named.options({ env: ["HF_TOKEN"] }), named.host);
    expect(plistAt(named.agentPlist()).EnvironmentVariables.HF_TOKEN).toBe("hf_secret_a");
    expect(mode(named.agentPlist())).toBe(0o600);
    expect(lines).toContain("environment: PATH=/opt/homebrew/bin:/usr/bin:/bin, HF_TOKEN (set)");
    expect(lines.join("\n")).not.toContain("hf_secret_a");

    const unnamed = mac({}, { HF_TOKEN: "hf_secret_b", HF_TOKEN_PATH: "/Volumes/keys/hf-token", OLLAMA_API_KEY: "k" });
    const out = service("install", agent, unnamed.options(), unnamed.host);
    expect(plistAt(unnamed.agentPlist()).EnvironmentVariables).toEqual({ PATH: "/opt/homebrew/bin:/usr/bin:/bin", HF_TOKEN_PATH: "/Volumes/keys/hf-token" });
    expect(mode(unnamed.agentPlist())).toBe(0o644);
    expect(out).toContain("not kept: HF_TOKEN, a secret (the plist and `launchctl print` would show it); huggingface_hub reads /Volumes/keys/hf-token (`hf auth login` writes it) without it; --env HF_TOKEN keeps it anyway");
    expect(out).toContain("not kept: OLLAMA_API_KEY, a secret (the plist and `launchctl print` would show it); --env OLLAMA_API_KEY keeps it anyway");
    expect(out.join("\n")).not.toContain("hf_secret_b");
  });

  test("as root: refused, since sudo would drop the environment and the GUI domain is the user's", () => {
    const m = mac();
    m.host.uid = 0;
    expect(() => service("install", agent, m.options(), m.host)).toThrow("run herd service install as the user herd is to run as, without sudo");
    expect(m.calls).toEqual([]);
  });
});

describe("install: a LaunchDaemon", () => {
  test("written through sudo as root's 0644 file in /Library/LaunchDaemons, loaded into the system domain, run as the user and group with HOME", () => {
    const m = mac({}, { OLLAMA_MODELS: "/Volumes/models/ollama" });
    const lines = service("install", { ...daemon, agentOnly: true }, m.options({ agentOnly: true, router: "http://10.0.0.1:11435" }), m.host);
    const path = m.daemonPlist("herd.node");
    const staged = /^sudo install -m 644 -o root -g wheel (\S+) /.exec(m.calls.find((c) => c.startsWith("sudo install"))!)![1]!;
    expect(m.calls).toEqual([
      "id -un",
      "id -gn",
      "launchctl print gui/501/herd.node",
      "launchctl print system/herd.node",
      `sudo install -m 644 -o root -g wheel ${staged} ${path}`,
      `sudo launchctl bootstrap system ${path}`,
    ]);
    expect(existsSync(staged)).toBe(false);
    expect(plistAt(path)).toMatchObject({
      Label: "herd.node",
      UserName: "ada",
      GroupName: "staff",
      EnvironmentVariables: { HOME: m.home, PATH: "/opt/homebrew/bin:/usr/bin:/bin", OLLAMA_MODELS: "/Volumes/models/ollama" },
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      StandardErrorPath: join(m.home, "Library", "Logs", "herd", "herd.node.log"),
    });
    expect(plistAt(path).ProgramArguments.slice(-5)).toEqual(["node", "--config", m.config, "--router", "http://10.0.0.1:11435"]);
    expect(m.said).toEqual([`herd asks sudo to write ${path} and load it into the system domain`]);
    expect(lines[0]).toBe(`wrote ${path} and loaded it into the system domain: herd starts at boot and runs as ada (group staff), whether anyone logs in or not`);
    expect(lines.at(-1)).toBe("status: herd service status --agent-only");
  });

  test("it replaces the LaunchAgent of the same label (only one may run), and a secret makes it 0600", () => {
    const m = mac({ loaded: new Set(["gui/501/herd.router"]) }, { HF_TOKEN: "hf_x" });
    mkdirSync(join(m.home, "Library", "LaunchAgents"), { recursive: true });
    writeFileSync(m.agentPlist(), "<plist/>");
    const lines = service("install", daemon, m.options({ env: ["HF_TOKEN"] }), m.host);
    expect(m.calls).toContain("launchctl bootout gui/501/herd.router");
    expect(existsSync(m.agentPlist())).toBe(false);
    expect(lines[0]).toBe(`removed the LaunchAgent ${m.agentPlist()}: only one of the two may run herd.router`);
    expect(m.calls.find((c) => c.startsWith("sudo install"))).toStartWith("sudo install -m 600 -o root -g wheel");
    expect(lines).toContain(`HF_TOKEN is in ${m.daemonPlist()}, which only root can read (0600); \`launchctl print\` shows a job's environment to those who may query its domain`);
  });
});

describe("launchctl's errors, as it printed them, say what to do", () => {
  const bootstrapFails = (file: string, flags = agent) => {
    const m = mac({ fail: { "launchctl bootstrap": recorded(file) } });
    try {
      service("install", flags, m.options(), m.host);
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error("install did not fail");
  };

  test("5, Input/output error: the usual causes and where launchd logs the real one", () => {
    const message = bootstrapFails("bootstrap-5.txt");
    expect(message).toStartWith("launchctl bootstrap gui/501 /");
    expect(message).toContain("failed (5: Input/output error): launchd gives no reason with this error. Usually the label was still stopping (run the command again in a few seconds), is disabled (`launchctl enable gui/501/herd.router`)");
    expect(message).toContain(`log show --last 5m --predicate 'process == "launchd" OR process == "xpcproxy"'`);
    expect(bootstrapFails("bootstrap-5.txt", daemon)).toContain("`sudo launchctl enable system/herd.router`");
  });

  test("37, Operation already in progress: loaded again meanwhile; run it again", () => {
    expect(bootstrapFails("bootstrap-37.txt")).toContain("failed (37: Operation already in progress): gui/501/herd.router was loaded again while herd replaced it; run the command again");
  });

  test("125, Domain does not support specified action: in a GUI domain, no GUI login: the daemon", () => {
    const message = bootstrapFails("bootstrap-125.txt");
    expect(message).toContain("failed (125: Domain does not support specified action): there is no GUI login session (gui/501)");
    expect(message).toContain("the same command with --daemon");
  });

  test("1, Operation not permitted, from the system domain: root only, through sudo", () => {
    // The bootout is refused, so the label stays loaded.
    const m = mac({ loaded: new Set(["system/herd.router"]), fail: { "launchctl bootout": recorded("bootout-1.txt") } });
    expect(() => service("uninstall", agent, m.options(), m.host)).toThrow(
      "launchctl bootout system/herd.router failed (1: Operation not permitted): the system domain takes changes only from root; herd runs these through sudo: check that `sudo -v` works for you",
    );
  });
});

describe("uninstall and status find either kind", () => {
  test("a LaunchDaemon: status names it, uninstall boots it out and removes its file through sudo", () => {
    const m = mac({ loaded: new Set(["system/herd.router"]) });
    writeFileSync(m.daemonPlist(), "<plist/>");
    const log = join(m.home, "Library", "Logs", "herd", "herd.router.log");
    expect(service("status", agent, m.options(), m.host)).toEqual([`herd.router (LaunchDaemon, system): installed (${m.daemonPlist()}), loaded`, `logs: ${log}`]);
    const lines = service("uninstall", agent, m.options(), m.host);
    expect(m.calls.slice(-4)).toEqual(["launchctl print system/herd.router", "sudo launchctl bootout system/herd.router", "launchctl print system/herd.router", `sudo rm -f ${m.daemonPlist()}`]);
    expect(existsSync(m.daemonPlist())).toBe(false);
    expect(m.said).toEqual([`herd asks sudo to unload and remove ${m.daemonPlist()}`]);
    expect(lines).toEqual([`unloaded and removed the LaunchDaemon ${m.daemonPlist()}`, `logs kept in ${join(m.home, "Library", "Logs", "herd")}`]);
    expect(service("status", agent, m.options(), m.host)).toEqual([`herd.router: not installed (neither ${m.agentPlist()} nor ${m.daemonPlist()}); \`herd service install\` installs it`]);
  });

  test("a LaunchAgent installed on a Mac where nobody is logged in: status says it cannot run and what instead", () => {
    const m = mac({ guiLogin: false });
    mkdirSync(join(m.home, "Library", "LaunchAgents"), { recursive: true });
    writeFileSync(m.agentPlist("herd.node"), "<plist/>");
    const [line] = service("status", { ...agent, agentOnly: true }, m.options(), m.host);
    expect(line).toStartWith(`herd.node (LaunchAgent, gui/501): installed (${m.agentPlist("herd.node")}), not loaded: there is no GUI login session (gui/501)`);
    expect(line).toContain("--daemon");
  });

  test("nothing installed: uninstall says so and runs nothing that needs root", () => {
    const m = mac();
    expect(service("uninstall", agent, m.options(), m.host)).toEqual([`no herd.router here (neither ${m.agentPlist()} nor ${m.daemonPlist()}); nothing to remove`]);
    expect(m.calls.filter((c) => c.startsWith("sudo"))).toEqual([]);
  });
});
