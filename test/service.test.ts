// `herd service`: the LaunchAgent that starts herd at login. launchctl and plutil
// are macOS's; here the generated plist is read as XML, and the command it holds is run.
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getJson, herd, spawnHerd, tmpDir } from "./helpers.ts";

type Plist = string | number | boolean | Plist[] | { [key: string]: Plist };

/** The plist's one top-level value, from its XML (the subset of the format herd writes). */
function parsePlist(xml: string): Plist {
  const tokens = [...xml.replace(/<\?xml[^>]*\?>|<!DOCTYPE[^>]*>/g, "").matchAll(/<(\/?)(\w+)(\/?)>([^<]*)/g)];
  let i = 0;
  const unescape = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const value = (): Plist => {
    const [, close, tag, selfClosing, text] = tokens[i++]!;
    if (close) throw new Error(`unexpected </${tag}>`);
    if (selfClosing) return tag === "true";
    const end = () => expect(tokens[i++]!.slice(1, 3)).toEqual(["/", tag]);
    if (tag === "string" || tag === "integer") {
      end();
      return tag === "integer" ? Number(text) : unescape(text!);
    }
    if (tag === "array" || tag === "plist") {
      const items: Plist[] = [];
      while (tokens[i]![1] !== "/") items.push(value());
      end();
      return tag === "plist" ? items[0]! : items;
    }
    if (tag === "dict") {
      const dict: Record<string, Plist> = {};
      while (tokens[i]![1] !== "/") {
        const [, , keyTag, , key] = tokens[i++]!;
        expect(keyTag).toBe("key");
        i++; // </key>
        dict[unescape(key!)] = value();
      }
      end();
      return dict;
    }
    throw new Error(`unexpected <${tag}>`);
  };
  return value();
}

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

  test.skipIf(process.platform === "darwin")("off macOS, install names the plist it would write and writes nothing; status says it does not run here", async () => {
    const { home, dir, env } = setup();
    const r = await herd(["service", "install"], { cwd: dir, env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`herd: launchctl is macOS-only: nothing written to ${join(home, "Library", "LaunchAgents", "herd.router.plist")}; \`herd service install --dry-run\` prints it`);
    expect(existsSync(join(home, "Library"))).toBe(false);
    const status = await herd(["service", "status", "--agent-only"], { cwd: dir, env });
    expect(status).toMatchObject({ code: 0, stdout: "herd.node: not installed; launchctl is macOS-only, so it does not run here\n" });
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
    ];
    for (const [args, cwd, message] of cases) {
      const r = await herd(args, { cwd, env });
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toContain(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
  }, 30_000);
});
