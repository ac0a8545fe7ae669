// `herd service install | uninstall | status`: herd run by launchd, so the router (with its local
// agent) or the node agent alone starts by itself and is restarted if it dies. Two kinds:
// - a LaunchAgent (~/Library/LaunchAgents, the gui/<uid> domain): runs while its user is logged in
//   at the screen, and only then (man launchctl: a GUI domain exists only for a GUI login);
// - a LaunchDaemon (/Library/LaunchDaemons, the system domain, installed through sudo): runs from
//   boot, as the installing user (UserName, GroupName), whether anyone logs in or not; what a
//   headless Mac (a Mini or Studio nobody logs into) needs.
// Logs go to ~/Library/Logs/herd/, where Console.app finds them.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { UserError } from "../errors.ts";
import { launchdPlist } from "./launchd-plist.ts";
import { Launchctl, noGuiSession, spawnRun, type Run } from "./launchctl.ts";
import { selfCommand } from "./self.ts";
import { keptLine, leftOutLines, secretsLine, serviceEnvironment } from "./service-env.ts";

export interface ServiceOptions {
  /** Only the node agent (`herd node`), reporting to `router`; else the router and its local agent. */
  agentOnly: boolean;
  /** The config file, absolute: the service must not depend on the directory it was installed from. */
  config: string;
  router?: string;
  nodeId?: string;
  ollama?: string;
  tokenFile?: string;
  dataDir?: string;
  port?: number;
  host?: string;
  /** Environment variables to keep by name (--env), beside PATH and the HF_*, OLLAMA_* ones. */
  env: string[];
}

/** This machine as the service command sees it; the tests give their own. */
export interface ServiceHost {
  run: Run;
  sleep: (ms: number) => void;
  macOS: boolean;
  uid: number;
  home: string;
  env: Record<string, string | undefined>;
  /** /Library/LaunchDaemons */
  daemonDir: string;
  /** A line for the terminal that is not the command's output (stderr). */
  say: (line: string) => void;
}

export function thisMac(): ServiceHost {
  return {
    run: spawnRun,
    sleep: Bun.sleepSync,
    macOS: process.platform === "darwin",
    uid: process.getuid?.() ?? 0,
    home: homedir(),
    env: process.env,
    daemonDir: "/Library/LaunchDaemons",
    say: (line) => console.error(line),
  };
}

export const SERVICE_ACTIONS = ["install", "uninstall", "status"] as const;

type Kind = "agent" | "daemon";
const KIND_NAME: Record<Kind, string> = { agent: "LaunchAgent", daemon: "LaunchDaemon" };

interface Where {
  kind: Kind;
  label: string;
  path: string;
  log: string;
  launchctl: Launchctl;
  /** Prefix for a command that needs root (the daemon's when not root). */
  sudo: string[];
}

function where(kind: Kind, agentOnly: boolean, host: ServiceHost): Where {
  const label = agentOnly ? "herd.node" : "herd.router";
  const sudo = kind === "daemon" && host.uid !== 0 ? ["sudo"] : [];
  const domain = kind === "daemon" ? "system" : `gui/${host.uid}`;
  return {
    kind,
    label,
    path: kind === "daemon" ? join(host.daemonDir, `${label}.plist`) : join(host.home, "Library", "LaunchAgents", `${label}.plist`),
    log: join(host.home, "Library", "Logs", "herd", `${label}.log`),
    launchctl: new Launchctl(host.run, host.sleep, domain, sudo),
    sudo,
  };
}

/** The command the service runs: this herd, with the flags given to install. */
function programArguments(o: ServiceOptions): string[] {
  const flag = (name: string, value: string | number | undefined) => (value === undefined ? [] : [`--${name}`, String(value)]);
  const args = o.agentOnly
    ? ["node", ...flag("config", o.config), ...flag("router", o.router ?? "http://127.0.0.1:11435"), ...flag("node-id", o.nodeId), ...flag("ollama", o.ollama), ...flag("token-file", o.tokenFile && resolve(o.tokenFile)), ...flag("data-dir", o.dataDir && resolve(o.dataDir))]
    : [...flag("config", o.config), ...flag("node-id", o.nodeId), ...flag("ollama", o.ollama), ...flag("data-dir", o.dataDir && resolve(o.dataDir)), ...flag("port", o.port), ...flag("host", o.host)];
  return [...selfCommand(), ...args];
}

/** Who the daemon runs as: this user and its primary group, by name (launchd refuses a job whose GroupName is no group: EX_CONFIG). */
function runAs(host: ServiceHost): { user: string; group: string } {
  const [user, group] = (["-un", "-gn"] as const).map((flag) => {
    const out = host.run(["id", flag]);
    const name = out.stdout.trim();
    if (out.code !== 0 || !/^[\w.-]{1,64}$/.test(name)) throw new UserError(`id ${flag} did not name your ${flag === "-un" ? "user" : "primary group"} (${out.stderr.trim() || `exit ${out.code}`}): the LaunchDaemon needs it`);
    return name;
  });
  return { user: user!, group: group! };
}

export interface ServiceFlags {
  agentOnly: boolean;
  /** install: the LaunchDaemon instead of the LaunchAgent. */
  daemon: boolean;
  /** install: print the plist instead of writing it, on any OS. */
  dryRun: boolean;
}

/** Runs `action` and returns the lines to print; `install` needs the options (`options()` throws when there is no config to run). */
export function service(action: (typeof SERVICE_ACTIONS)[number], flags: ServiceFlags, options: () => ServiceOptions, host: ServiceHost = thisMac()): string[] {
  const both = (["agent", "daemon"] as const).map((kind) => where(kind, flags.agentOnly, host));
  switch (action) {
    case "install":
      return install(flags.daemon ? both[1]! : both[0]!, flags, options(), host);
    case "uninstall":
      return uninstall(both, host);
    case "status":
      return status(both, flags.agentOnly, host);
  }
}

function install(w: Where, flags: ServiceFlags, o: ServiceOptions, host: ServiceHost): string[] {
  const env = serviceEnvironment(host.env, o.env);
  const secret = env.kept.some((k) => k.secret);
  const user = w.kind === "daemon" ? runAs(host) : undefined;
  // A daemon's job starts with launchd's environment, not a login's: herd's ~/.herd and Ollama's ~/.ollama are the user's.
  const environment = [...(user ? [{ name: "HOME", value: host.home }] : []), ...env.kept];
  const xml = launchdPlist({ label: w.label, programArguments: programArguments(o), workingDirectory: dirname(o.config), environment, log: w.log, runAs: user });
  const readers = user ? "root" : "you";
  const into = w.kind === "daemon" ? "the system domain" : w.launchctl.domain;
  const notes = [keptLine(env), ...leftOutLines(env, host.env, host.home), secretsLine(env, w.path, readers)].filter((l): l is string => l !== null);
  if (flags.dryRun) {
    // stdout is the plist alone, so it can be piped to a file or a checker.
    host.say(`herd service install would write ${w.path}${user ? " through sudo" : ""} (logs: ${w.log}) and load it into ${into}`);
    for (const line of notes) host.say(line);
    return [xml.trimEnd()];
  }
  if (!host.macOS) throw new UserError(`launchctl is macOS-only: nothing written to ${w.path}; \`herd service install${flags.daemon ? " --daemon" : ""} --dry-run\` prints it`);
  if (host.uid === 0) throw new UserError("run herd service install as the user herd is to run as, without sudo: herd asks sudo itself for what needs root, and sudo would drop your environment");
  if (w.kind === "agent" && w.launchctl.domainExists().code !== 0) throw new UserError(`cannot load a LaunchAgent: ${noGuiSession(w.launchctl.domain)}`);
  if (w.sudo.length) host.say(`herd asks sudo to write ${w.path} and load it into the system domain`);
  mkdirSync(dirname(w.log), { recursive: true });
  const lines: string[] = [];
  const other = where(w.kind === "agent" ? "daemon" : "agent", o.agentOnly, host);
  if (present(other)) {
    remove(other, host);
    lines.push(`removed the ${KIND_NAME[other.kind]} ${other.path}: only one of the two may run ${w.label}`);
  }
  // A re-install: the loaded job goes first, so the new file is the one that runs.
  if (w.launchctl.loaded(w.label)) w.launchctl.unload(w.label);
  write(w, xml, secret ? 0o600 : 0o644, host);
  w.launchctl.load(w.label, w.path);
  const when = user
    ? `herd starts at boot and runs as ${user.user} (group ${user.group}), whether anyone logs in or not`
    : "herd starts when you log in at the screen and stops at logout; on a Mac nobody logs into (a headless Mini or Studio), install with --daemon instead";
  return [...lines, `wrote ${w.path} and loaded it into ${into}: ${when}`, ...notes, `logs: ${w.log}`, `status: herd service status${o.agentOnly ? " --agent-only" : ""}`];
}

function write(w: Where, xml: string, mode: number, host: ServiceHost): void {
  if (w.kind === "agent") {
    mkdirSync(dirname(w.path), { recursive: true });
    writeFileSync(w.path, xml, { mode });
    chmodSync(w.path, mode); // a file that was there keeps its mode otherwise
    return;
  }
  // A LaunchDaemon's plist must be root's and not writable by others (man launchctl); install(1) copies it so, in one step.
  const dir = mkdtempSync(join(tmpdir(), "herd-service-"));
  try {
    const staged = join(dir, `${w.label}.plist`);
    writeFileSync(staged, xml, { mode: 0o600 });
    const out = host.run([...w.sudo, "install", "-m", mode.toString(8), "-o", "root", "-g", "wheel", staged, w.path]);
    if (out.code !== 0) throw new UserError(`${[...w.sudo, "install"].join(" ")} could not write ${w.path}: ${out.stderr.trim() || `exit ${out.code}`}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const present = (w: Where) => existsSync(w.path) || w.launchctl.loaded(w.label);

function remove(w: Where, host: ServiceHost): void {
  if (w.sudo.length) host.say(`herd asks sudo to unload and remove ${w.path}`);
  if (w.launchctl.loaded(w.label)) w.launchctl.unload(w.label);
  if (w.kind === "agent") return rmSync(w.path, { force: true });
  if (!existsSync(w.path)) return;
  const out = host.run([...w.sudo, "rm", "-f", w.path]);
  if (out.code !== 0) throw new UserError(`${[...w.sudo, "rm"].join(" ")} could not remove ${w.path}: ${out.stderr.trim() || `exit ${out.code}`}`);
}

function uninstall(both: Where[], host: ServiceHost): string[] {
  if (!host.macOS) throw new UserError("launchctl is macOS-only: there is no LaunchAgent or LaunchDaemon to remove here");
  const found = both.filter(present);
  const { label, log } = both[0]!;
  if (!found.length) return [`no ${label} here (neither ${both.map((w) => w.path).join(" nor ")}); nothing to remove`];
  for (const w of found) remove(w, host);
  return [...found.map((w) => `unloaded and removed the ${KIND_NAME[w.kind]} ${w.path}`), `logs kept in ${dirname(log)}`];
}

function status(both: Where[], agentOnly: boolean, host: ServiceHost): string[] {
  const { label, log } = both[0]!;
  if (!host.macOS) {
    const files = both.filter((w) => existsSync(w.path)).map((w) => `${w.path} exists`);
    return [`${label}: ${files.join(", ") || "not installed"}; launchctl is macOS-only, so it does not run here`];
  }
  const lines = both.flatMap((w) => {
    const installed = existsSync(w.path);
    const loaded = w.launchctl.loaded(w.label);
    if (!installed && !loaded) return [];
    // An agent that is there but not running, on a Mac with no one logged in at the screen: say why.
    const why = w.kind === "agent" && installed && !loaded && w.launchctl.domainExists().code !== 0 ? `: ${noGuiSession(w.launchctl.domain)}` : "";
    return [`${label} (${KIND_NAME[w.kind]}, ${w.launchctl.domain}): ${installed ? `installed (${w.path})` : "not installed"}, ${loaded ? "loaded" : "not loaded"}${why}`];
  });
  if (!lines.length) return [`${label}: not installed (neither ${both.map((w) => w.path).join(" nor ")}); \`herd service install${agentOnly ? " --agent-only" : ""}\` installs it`];
  return [...lines, `logs: ${log}`];
}
