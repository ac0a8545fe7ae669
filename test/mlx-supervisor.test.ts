// The node agent's MLX supervisor. Its policy (arguments, memory gate, backoff,
// quarantine, what a health poll means) is pure and tested alone; its processes
// are tested through a real `herd` (router + this node's agent) whose
// mlxCommand is a stand-in mlx_lm.server (test/fixtures/fake-mlx-lm-server.ts)
// that misbehaves as its model name says, reporting what ran in a state dir.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, ftruncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, parseConfig } from "../src/config/load.ts";
import type { NodeEntry } from "../src/config/schema.ts";
import {
  CRASH_WINDOW_MS,
  QUARANTINE_MS,
  afterCrash,
  hungTooLong,
  HANG_RESTART_MS,
  memoryGate,
  readPoll,
  serverArgs,
} from "../src/node/mlx-policy.ts";
import { systemCollector } from "../src/node/collectors.ts";
import { type SimNode, startSimMlx } from "../src/sim/index.ts";
import { parseMlxServerArgs } from "../src/sim/mlx-args.ts";
import { ROOT, cleanupFile, eventually, freePorts, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

// Real processes on a machine that may be busy: generous bounds (every wait below is bounded too).
setDefaultTimeout(30_000);
afterAll(cleanupFile);

describe("policy", () => {
  test("mlx_lm.server arguments: model, port, host, and the optional ones when set and the server takes them", () => {
    const base = ["--model", "org/m", "--port", "11441", "--host", "0.0.0.0"];
    const everything = { model: "org/m", port: 11441, kvBits: 8, promptCacheSize: 4, promptCacheBytes: 1000, draftModel: "org/d" } as const;
    expect(serverArgs({ model: "org/m", port: 11440, kvBits: 0 }, "127.0.0.1", null)).toEqual({ args: ["--model", "org/m", "--port", "11440", "--host", "127.0.0.1"], leftOut: [] });
    // A help that could not be read: all that is configured.
    expect(serverArgs(everything, "0.0.0.0", null).args).toEqual([...base, "--kv-bits", "8", "--prompt-cache-size", "4", "--prompt-cache-bytes", "1000", "--draft-model", "org/d"]);
    // mlx-lm 0.30.x: no prompt-cache flags, no --kv-bits (no release has it).
    expect(serverArgs(everything, "0.0.0.0", new Set(["--model", "--port", "--host", "--draft-model"]))).toEqual({
      args: [...base, "--draft-model", "org/d"],
      leftOut: [
        "kvBits 8 left out: this mlx_lm.server has no --kv-bits (stock mlx-lm never had it)",
        "promptCacheSize 4 left out: this mlx_lm.server has no --prompt-cache-size (mlx-lm 0.31.0 added it)",
        "promptCacheBytes 1000 left out: this mlx_lm.server has no --prompt-cache-bytes (mlx-lm 0.31.0 added it)",
      ],
    });
  });

  test("every example's MLX servers run on a stock `pip install mlx-lm`: the simulated 0.32.0 server takes their command lines as configured", async () => {
    const entries: { where: string; node: NodeEntry; server: NodeEntry["mlx"][number] }[] = [];
    for (const file of ["examples/fleet.config.ts", "examples/fleet.config.json", "examples/fleet.config.yaml", "examples/secure-fleet.config.ts"]) {
      const { config } = await loadConfig(join(ROOT, file), { secrets: "unchecked" });
      for (const node of config.nodes) for (const server of node.mlx) entries.push({ where: file, node, server });
    }
    // The ones written in prose or in comments: README, docs, herd.config.ts and `herd init`'s template.
    const prose = ["README.md", "herd.config.ts", "src/commands/init.ts", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)];
    for (const file of prose) {
      for (const [literal] of readFileSync(join(ROOT, file), "utf8").matchAll(/\{ model: "[^"]*", port: \d+[^{}]*\}/g)) {
        const node = parseConfig({ nodes: [{ id: "n", mlx: [new Function(`return (${literal})`)()] }] }).nodes[0]!;
        entries.push({ where: file, node, server: node.mlx[0]! });
      }
    }
    expect(entries.length).toBeGreaterThan(8);
    const refused = entries.flatMap(({ where, node, server }) => {
      const line = parseMlxServerArgs(serverArgs(server, node.mlxBindHost ?? "127.0.0.1", null).args);
      return "error" in line ? [`${where}: ${line.error.split("\n").at(-2)}`] : [];
    });
    expect(refused).toEqual([]);
  });

  test("the memory gate: weights plus headroom must fit in free memory, said as seed 000 says it", () => {
    expect(memoryGate(32, 10, 16)).toBe("memory gate: 42.0 GB needed, 16 GB available");
    expect(memoryGate(32, 10, 42)).toBeNull();
  });

  test("backoff doubles per crash in the window; the fifth quarantines for 600 s and starts the count afresh", () => {
    let crashes: number[] = [];
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const next = afterCrash(crashes, 1_000 + i);
      expect(next.quarantine).toBeNull();
      delays.push(next.restartInMs);
      crashes = next.crashes;
    }
    expect(delays).toEqual([500, 1000, 2000, 4000]);
    const fifth = afterCrash(crashes, 2_000);
    expect(fifth).toEqual({ crashes: [], restartInMs: QUARANTINE_MS, quarantine: "5 crashes within 300s; next restart in 600s" });
    // Crashes older than the window are forgotten.
    expect(afterCrash([0, 1, 2, 3], CRASH_WINDOW_MS + 10)).toEqual({ crashes: [CRASH_WINDOW_MS + 10], restartInMs: 500, quarantine: null });
  });

  test("a refused poll is a server starting until it has listened; listening, it is loading until a completion answers; a timeout is a hang", () => {
    const refused = { ok: false as const, refused: true, detail: "/v1/models: connection refused" };
    const timeout = { ok: false as const, refused: false, detail: "/v1/models: no answer within 500 ms" };
    expect(readPoll({ ok: true }, true, true)).toEqual({ status: "healthy", reason: "" });
    expect(readPoll({ ok: true }, true, false).status).toBe("loading");
    expect(readPoll(refused, false, false).status).toBe("starting");
    expect(readPoll(refused, true, false)).toEqual({ status: "unhealthy", reason: refused.detail });
    expect(readPoll(refused, true, true)).toEqual({ status: "unhealthy", reason: refused.detail });
    expect(readPoll(timeout, false, false)).toEqual({ status: "unhealthy", reason: timeout.detail });
    expect(hungTooLong(null, 10 ** 9)).toBe(false);
    expect(hungTooLong(0, HANG_RESTART_MS - 1)).toBe(false);
    expect(hungTooLong(0, HANG_RESTART_MS)).toBe(true);
  });
});

describe("supervised servers through a real herd", () => {
  const FAKE = join(ROOT, "test/fixtures/fake-mlx-lm-server.ts");
  let dir: string;
  let state: string;
  let configFile: string;
  let orphan: SimNode;
  let herd: Awaited<ReturnType<typeof startRouterProcess>>;
  const ports: Record<"healthy" | "crash" | "hang" | "exits" | "orphan" | "big" | "local" | "added", number> = {} as never;

  const config = (servers: string[]) =>
    `export default {
      nodes: [{ id: "n1", mlxCommand: ${JSON.stringify([process.execPath, FAKE])}, mlx: [${servers.join(", ")}] }],
      heartbeat: { intervalMs: 200, timeoutMs: 1000, offlineMs: 3000 },
      timeouts: { connectMs: 2000 },
    };\n`;
  const server = (model: string, port: number, extra = "") => `{ model: "${model}", port: ${port}${extra} }`;
  const first = () => [
    server("mlx-community/Qwen3-8B-4bit", ports.healthy, ", kvBits: 8"),
    server("org/crash-model", ports.crash),
    server("org/hang-model", ports.hang),
    server("org/exit-after-4s-model", ports.exits),
    server("org/orphaned", ports.orphan),
    server("org/big-model", ports.big),
    server("~/models/local-model", ports.local, ', draftModel: "~/models/draft-model"'),
  ];
  const servers = () => serversOf(herd.url);
  const until = (port: number, check: (s: any) => boolean, timeoutMs: number, what: string) => untilServer(herd.url, port, check, timeoutMs, what);
  const ran = (port: number): { pid: number; argv: string[] } | null => {
    const file = join(state, `${port}.json`);
    return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    dir = tmpDir();
    state = join(dir, "state");
    mkdirSync(state);
    [ports.healthy, ports.crash, ports.hang, ports.exits, ports.orphan, ports.big, ports.local, ports.added] = await freePorts(8);
    for (const model of ["local-model", "draft-model"]) mkdirSync(join(dir, "home", "models", model), { recursive: true });
    // Someone else's server already holds the orphan port.
    orphan = await startSimMlx({ id: "stray", model: "org/orphaned", port: ports.orphan });
    // A 2 TB model in the Hugging Face cache, for the memory gate.
    cachedModel(join(dir, "hub"), "org/big-model", 2 * 1024 ** 4);
    configFile = join(dir, "herd.config.ts");
    writeFileSync(configFile, config(first()));
    herd = await startRouterProcess(["--config", configFile, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--node-id", "n1"], {
      env: { FAKE_MLX_STATE_DIR: state, HF_HUB_CACHE: join(dir, "hub"), HOME: join(dir, "home") },
    });
  });

  afterAll(async () => {
    await herd?.stop();
    await orphan?.stop();
  });

  test("a model at ~/… reaches mlx_lm with ~ expanded (it would take the path for a repo id, and fail), its draft model too; it serves", async () => {
    const s = await until(ports.local, (s) => s.status === "healthy", 15000, "the local model healthy");
    expect(s.model).toBe("~/models/local-model");
    const models = join(dir, "home", "models");
    expect(ran(ports.local)!.argv).toEqual(["--model", join(models, "local-model"), "--port", String(ports.local), "--host", "127.0.0.1", "--draft-model", join(models, "draft-model")]);
    const chat = await fetch(`${herd.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "mlx:~/models/local-model", messages: [{ role: "user", content: "hi" }], stream: false }) });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as any).message.content.length).toBeGreaterThan(0);
  });

  test("a server starts with the arguments its mlx_lm.server takes (read from its --help) and turns healthy; kvBits, which stock mlx-lm lacks, is left out and said", async () => {
    const s = await until(ports.healthy, (s) => s.status === "healthy", 15000, "the healthy server");
    expect(s).toMatchObject({ model: "mlx-community/Qwen3-8B-4bit", kv_bits: 0, model_size_gb: 0 }); // what it runs with
    expect(s.status_reason).toBe("kvBits 8 left out: this mlx_lm.server has no --kv-bits (stock mlx-lm never had it)");
    expect(s.last_ok_ts).toBeGreaterThan(Date.now() / 1000 - 10);
    expect(ran(ports.healthy)!.argv).toEqual(["--model", "mlx-community/Qwen3-8B-4bit", "--port", String(ports.healthy), "--host", "127.0.0.1"]);
    expect(herd.output().match(/MLX mlx-community\/Qwen3-8B-4bit on :\d+: started/g)).toHaveLength(1);
    const node = (await getJson(`${herd.url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1");
    expect(node.mlx_bind_host).toBe("127.0.0.1");
  });

  test("a server that hangs on /v1/models is unhealthy", async () => {
    const s = await until(ports.hang, (s) => s.status === "unhealthy", 15000, "the hung server unhealthy");
    expect(s.status_reason).toBe("/v1/models: no answer within 2000 ms");
    expect(alive(ran(ports.hang)!.pid)).toBe(true); // reported, not yet killed
  });

  test("a server that dies after serving is restarted after a backoff, and serves again", async () => {
    await until(ports.exits, (s) => s.status === "healthy", 15000, "the server healthy");
    const first = ran(ports.exits)!.pid;
    await herd.waitFor(new RegExp(`:${ports.exits}: unhealthy \\(subprocess exited rc=3 \\(\\[fake\\] exiting after 4s\\); restarting in 0.5s\\)`), 15000);
    await eventually(async () => ran(ports.exits)!.pid !== first, 15000, "a new process");
    expect((await until(ports.exits, (s) => s.status === "healthy", 15000, "healthy again")).status_reason).toBe("");
  }, 40000);

  test("a port someone else holds is reported and never started on", async () => {
    const s = await until(ports.orphan, (s) => s.status === "unhealthy", 15000, "the orphan reported");
    expect(s.status_reason).toContain(`port ${ports.orphan} is already in use by a process herd did not start`);
    expect(ran(ports.orphan)).toBeNull();
    expect(orphan.state().counters.requests).toBe(0); // probed by connecting only: nothing sent to it
  });

  test("the memory gate blocks a model bigger than free memory, sized from the Hugging Face cache", async () => {
    const s = await until(ports.big, (s) => s.status === "memory_blocked", 15000, "the big model blocked");
    expect(s.model_size_gb).toBe(2048);
    expect(s.status_reason).toMatch(/^memory gate: 2058\.0 GB needed, \d+ GB available$/);
    expect(ran(ports.big)).toBeNull();
  });

  test("a crash loop is restarted with backoff, then quarantined with seed 000's reason", async () => {
    const s = await until(ports.crash, (s) => s.status === "quarantined", 30000, "the crash loop quarantined");
    expect(s.status_reason).toStartWith("5 crashes within 300s; next restart in 600s");
    expect(s.status_reason).toContain("subprocess exited rc=1 (RuntimeError: [fake] cannot load org/crash-model)");
    expect(herd.output().match(/MLX org\/crash-model on :\d+: started/g)?.length).toBe(5);
  }, 40000);

  test("a reload adds and removes servers without touching the others", async () => {
    const before = ran(ports.healthy)!.pid;
    const hung = ran(ports.hang)!.pid;
    const [, , , , ...rest] = first();
    writeFileSync(configFile, config([server("mlx-community/Qwen3-8B-4bit", ports.healthy, ", kvBits: 8"), ...rest, server("org/added-model", ports.added)]));
    await until(ports.added, (s) => s.status === "healthy", 15000, "the added server healthy");
    await eventually(async () => {
      const now = await servers();
      return [ports.hang, ports.crash, ports.exits].every((p) => !(p in now));
    }, 5000, "the removed servers gone");
    expect(alive(hung)).toBe(false);
    expect(ran(ports.healthy)!.pid).toBe(before);
    expect(alive(before)).toBe(true);
    expect((await servers())[ports.healthy].status).toBe("healthy");
  });

  test("stopping the agent stops every server it started: no process left", async () => {
    const pids = [ports.healthy, ports.added].map((p) => ran(p)!.pid);
    expect(pids.every(alive)).toBe(true);
    expect(await herd.stop("SIGTERM")).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
    expect(herd.output()).toContain(`MLX org/added-model on :${ports.added}: stopped`);
  });
});

/** The MLX servers node n1 reports, by port. */
async function serversOf(url: string): Promise<Record<number, any>> {
  const node = (await getJson(`${url}/fleet/status`)).nodes.find((n: any) => n.node_id === "n1");
  return Object.fromEntries((node?.mlx_servers ?? []).map((s: any) => [s.port, s]));
}

function untilServer(url: string, port: number, check: (s: any) => boolean, timeoutMs: number, what: string) {
  return eventually(async () => {
    const s = (await serversOf(url))[port];
    return s && check(s) ? s : null;
  }, timeoutMs, what);
}

/** A model's weights in a Hugging Face cache: a sparse file, so no disk is used whatever its size. */
function cachedModel(hub: string, model: string, bytes: number): void {
  const blobs = join(hub, `models--${model.replaceAll("/", "--")}`, "blobs");
  mkdirSync(blobs, { recursive: true });
  const fd = openSync(join(blobs, "weights"), "w");
  ftruncateSync(fd, bytes);
  closeSync(fd);
}


// Readiness, per mlx-lm release: 0.32.0 listens at once and loads after (bound, answering /v1/models, unable to
// complete: "loading"); 0.31.2 loads before it listens ("starting" all along). Either way a server is healthy only
// once a one-token completion answers, the memory gate counts a server not yet loaded as taking its weights, and a
// load that fails is unhealthy with the exception its traceback ends in, and is restarted under the backoff.
for (const version of ["0.32.0", "0.31.2"] as const) {
  describe(`readiness on mlx-lm ${version}`, () => {
    const FAKE = join(ROOT, "test/fixtures/fake-mlx-lm-server.ts");
    const SLOW = "org/slow-load-6s-model";
    const SECOND = "org/second-model";
    const MISSING = "org/missing-model";
    const unready = version === "0.32.0" ? "loading" : "starting";
    let state: string;
    let herd: Awaited<ReturnType<typeof startRouterProcess>>;
    const ports: Record<"slow" | "second" | "missing", number> = {} as never;
    const until = (port: number, check: (s: any) => boolean, timeoutMs: number, what: string) => untilServer(herd.url, port, check, timeoutMs, what);

    beforeAll(async () => {
      const dir = tmpDir();
      state = join(dir, "state");
      mkdirSync(state);
      [ports.slow, ports.second, ports.missing] = await freePorts(3);
      // Two models of 60% of free memory each (sparse files): the first fits, the second only once the first has loaded.
      const bytes = Math.floor(((await systemCollector().memory()).available_gb * 0.6 * 1024 ** 3) / 4096) * 4096;
      for (const model of [SLOW, SECOND]) cachedModel(join(dir, "hub"), model, bytes);
      const file = join(dir, "herd.config.ts");
      const mlx = [SLOW, SECOND, MISSING].map((model, i) => `{ model: "${model}", port: ${[ports.slow, ports.second, ports.missing][i]} }`);
      writeFileSync(
        file,
        `export default {
          nodes: [{ id: "n1", mlxCommand: ${JSON.stringify([process.execPath, FAKE, "--mlx-lm-version", version])}, mlxMemoryHeadroomGb: 0, mlx: [${mlx.join(", ")}] }],
          heartbeat: { intervalMs: 200, timeoutMs: 1000, offlineMs: 3000 },
        };\n`,
      );
      herd = await startRouterProcess(["--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data"), "--node-id", "n1"], {
        env: { FAKE_MLX_STATE_DIR: state, HF_HUB_CACHE: join(dir, "hub") },
      });
    });

    afterAll(async () => {
      await herd?.stop();
    });

    test(`a server whose model is not in yet is ${unready}, serves no request, and its weights count as taken; healthy once one completion answers`, async () => {
      const slow = await until(ports.slow, (s) => s.status === unready && s.status_reason !== "", 15000, `the slow server ${unready}`);
      expect(slow.status_reason).toStartWith(version === "0.32.0" ? "listening; loading the model" : "not listening yet");
      const blocked = await until(ports.second, (s) => s.status === "memory_blocked", 15000, "the second server blocked");
      expect(blocked.status_reason).toMatch(/^memory gate: [\d.]+ GB needed, \d+ GB available$/);
      const refused = await fetch(`${herd.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: `mlx:${SLOW}`, messages: [{ role: "user", content: "hi" }], stream: false }) });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as any).error).toContain(`n1:${ports.slow} ${unready}`);

      expect((await until(ports.slow, (s) => s.status === "healthy", 20000, "the slow server healthy")).status_reason).toBe("");
      // One readiness completion at a time: the one sent while it loaded is the one it answered.
      const sim = await getJson(`http://127.0.0.1:${ports.slow}/_sim`);
      expect(sim.counters.completions).toBe(1);
      await until(ports.second, (s) => s.status === "healthy", 20000, "the second server healthy once the first has loaded");
    }, 60000);

    test("a load that fails is unhealthy with the exception its traceback ends in, and is restarted under the backoff", async () => {
      const failed = await until(ports.missing, (s) => s.status === "unhealthy" && s.status_reason.includes("Error"), 20000, "the failed load reported");
      const why = version === "0.32.0" ? "its model did not load: " : "subprocess exited rc=1 (";
      expect(failed.status_reason).toStartWith(`${why}huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: `);
      expect(failed.status_reason).toMatch(/; restarting in [\d.]+s$/);
      const first = JSON.parse(readFileSync(join(state, `${ports.missing}.json`), "utf8")).pid;
      await eventually(async () => JSON.parse(readFileSync(join(state, `${ports.missing}.json`), "utf8")).pid !== first, 20000, "a new process");
      expect(() => process.kill(first, 0)).toThrow(); // killed, not left serving /v1/models for ever
    }, 60000);
  });
}
