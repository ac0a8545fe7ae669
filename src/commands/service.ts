// `herd service install | uninstall | status`: herd as a macOS LaunchAgent, so the
// router (with its local agent) or the node agent alone starts at login and is
// restarted if it dies. Logs go to ~/Library/Logs/herd/, where Console.app finds them.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { UserError } from "../errors.ts";
import { selfCommand } from "./self.ts";

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
}

interface Where {
  label: string;
  /** ~/Library/LaunchAgents/<label>.plist */
  path: string;
  log: string;
}

/** Where the router's or the agent's LaunchAgent and its log are. */
function where(agentOnly: boolean, home = homedir()): Where {
  const label = agentOnly ? "herd.node" : "herd.router";
  return { label, path: join(home, "Library", "LaunchAgents", `${label}.plist`), log: join(home, "Library", "Logs", "herd", `${label}.log`) };
}

/** The LaunchAgent for these options: what `install` writes. */
export function launchAgent(o: ServiceOptions, home = homedir(), command = selfCommand()): Where & { xml: string } {
  const { label, path, log } = where(o.agentOnly, home);
  const flag = (name: string, value: string | number | undefined) => (value === undefined ? [] : [`--${name}`, String(value)]);
  const args = o.agentOnly
    ? ["node", ...flag("config", o.config), ...flag("router", o.router ?? "http://127.0.0.1:11435"), ...flag("node-id", o.nodeId), ...flag("ollama", o.ollama), ...flag("token-file", o.tokenFile && resolve(o.tokenFile)), ...flag("data-dir", o.dataDir && resolve(o.dataDir))]
    : [...flag("config", o.config), ...flag("node-id", o.nodeId), ...flag("ollama", o.ollama), ...flag("data-dir", o.dataDir && resolve(o.dataDir)), ...flag("port", o.port), ...flag("host", o.host)];
  const string = (s: string) => `<string>${escapeXml(s)}</string>`;
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  ${string(label)}
  <key>ProgramArguments</key>
  <array>
${[...command, ...args].map((a) => `    ${string(a)}`).join("\n")}
  </array>
  <key>WorkingDirectory</key>
  ${string(dirname(o.config))}
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key>
    ${string(process.env.PATH ?? "/usr/bin:/bin")}
  </dict>
  <key>ThrottleInterval</key>
  <integer>10</integer>
  <key>StandardOutPath</key>
  ${string(log)}
  <key>StandardErrorPath</key>
  ${string(log)}
</dict>
</plist>
`;
  return { label, path, log, xml };
}

function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Runs `action` and returns the lines to print; `install` needs the options (`config()` throws when there is
 * no config to run). `dryRun`: install only prints what it would write, on any OS.
 */
export const SERVICE_ACTIONS = ["install", "uninstall", "status"] as const;

export function service(action: (typeof SERVICE_ACTIONS)[number], agentOnly: boolean, options: () => ServiceOptions, dryRun: boolean): string[] {
  const macOS = process.platform === "darwin";
  const domain = `gui/${process.getuid?.() ?? 0}`;
  switch (action) {
    case "install": {
      const agent = launchAgent(options());
      if (dryRun) {
        // stdout is the plist alone, so it can be piped to a file or a checker.
        console.error(`herd service install would write ${agent.path} (logs: ${agent.log}) and load it with launchctl`);
        return [agent.xml.trimEnd()];
      }
      if (!macOS) throw new UserError(`launchctl is macOS-only: nothing written to ${agent.path}; \`herd service install --dry-run\` prints it`);
      mkdirSync(dirname(agent.path), { recursive: true });
      mkdirSync(dirname(agent.log), { recursive: true });
      // Loaded already (a re-install with new flags): unload first, so the new file is the one that runs.
      launchctl(["bootout", `${domain}/${agent.label}`], true);
      writeFileSync(agent.path, agent.xml);
      launchctl(["bootstrap", domain, agent.path]);
      return [`wrote ${agent.path} and loaded it: herd starts at login`, `logs: ${agent.log}`, `status: herd service status${agentOnly ? " --agent-only" : ""}`];
    }
    case "uninstall": {
      const agent = where(agentOnly);
      if (!macOS) throw new UserError("launchctl is macOS-only: there is no LaunchAgent to remove here");
      launchctl(["bootout", `${domain}/${agent.label}`], true);
      const had = existsSync(agent.path);
      rmSync(agent.path, { force: true });
      return [had ? `unloaded and removed ${agent.path}` : `no ${agent.path}; nothing to remove`, `logs kept in ${dirname(agent.log)}`];
    }
    case "status": {
      const agent = where(agentOnly);
      const installed = existsSync(agent.path);
      if (!macOS) return [`${agent.label}: ${installed ? `${agent.path} exists` : "not installed"}; launchctl is macOS-only, so it does not run here`];
      const loaded = launchctl(["print", `${domain}/${agent.label}`], true);
      return [`${agent.label}: ${installed ? `installed (${agent.path})` : "not installed"}, ${loaded ? "loaded" : "not loaded"}`, `logs: ${agent.log}`];
    }
  }
}

/** Runs launchctl; a failure is the user's to read unless `quiet` (then it only returns false). */
function launchctl(args: string[], quiet = false): boolean {
  const r = Bun.spawnSync(["launchctl", ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.success || quiet) return r.success;
  throw new UserError(`launchctl ${args.join(" ")} failed: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`);
}
