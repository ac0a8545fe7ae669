// The dashboard in a real browser: Debian's chromium driven by playwright-core,
// against a router process over three simulated Macs, two reported by the real
// node agent (memory, CPU) and one polled. Every page loads clean, the overview
// follows the fleet live, and the toggles, pins and pulls act on the router and
// the nodes. Each page's screenshot lands in test/artifacts/ (git-ignored).
// Tests share the fleet, in order; the one that stops a node runs last.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { LiveConfig } from "../src/config/live.ts";
import { type AgentHandle, postTo, startAgent } from "../src/node/agent.ts";
import { simCollector } from "../src/sim/collector.ts";
import { openStore } from "../src/store/db.ts";
import { writeSlots } from "../src/store/slots.ts";
import { CATALOG, type SimNode, startSimOllama } from "../src/sim/index.ts";
import { cleanupFile, eventually, getJson, onCleanup, ROOT, startRouterProcess, tmpDir } from "./helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test/artifacts");
const HEARTBEAT = { intervalMs: 200, timeoutMs: 700, offlineMs: 1400 };
const PAGES = ["overview", "trends", "models", "apps", "benchmarks", "health", "recommendations", "settings"];
// The pages whose charts the traces this file sends must fill.
const CHARTED = ["trends", "models", "apps"];
const VIEWPORT = { width: 1440, height: 900 };
const pathOf = (name: string) => (name === "overview" ? "/dashboard" : `/dashboard/${name}`);

let studio: SimNode;
let mini: SimNode;
let air: SimNode;
const NODE_TOKEN = "dashboard-node-token";
let router: Awaited<ReturnType<typeof startRouterProcess>>;
let agents: AgentHandle[] = [];
let browser: Browser;
let light: BrowserContext;

beforeAll(async () => {
  [studio, mini, air] = await Promise.all([
    startSimOllama({ id: "studio", memoryGb: 64, models: ["qwen3:32b", "llama3.2:3b", "nomic-embed-text"], loaded: ["qwen3:32b"] }),
    startSimOllama({ id: "mini", memoryGb: 16, models: ["qwen3:8b", "llama3.2:3b"], loaded: ["llama3.2:3b"] }),
    startSimOllama({ id: "air", memoryGb: 8, models: ["llama3.2:1b"], loaded: [] }),
  ]);
  const dir = tmpDir();
  const file = join(dir, "herd.config.ts");
  // mini declares its slots; air's were learned by an earlier run of the router (test/slots.test.ts learns them), kept in the store.
  // air, polled, declares its memory as an owner would for a Mac without an agent.
  const nodes = [studio, mini, air].map((n) => ({ id: n.id, ollama: n.url, ...(n === mini ? { parallel: 2 } : {}), ...(n === air ? { hardware: { memoryGb: 8 } } : {}) }));
  // The agents carry a node credential: herd shows a polled node's memory from no other heartbeat.
  writeFileSync(file, `export default { nodes: ${JSON.stringify(nodes)}, heartbeat: ${JSON.stringify(HEARTBEAT)}, auth: { nodeToken: "${NODE_TOKEN}" } };\n`);
  const kept = openStore(join(dir, "data"));
  writeSlots(kept, [{ nodeId: "air", slots: 1 }]);
  kept.close();
  // Debug logging: the live stream says when it stops, which is how a test sees it does.
  router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")], { env: { HERD_LOG_LEVEL: "debug" } });
  const live = await LiveConfig.open(null, (c) => ({ ...c, heartbeat: HEARTBEAT }));
  agents = [studio, mini].map((sim) =>
    startAgent({ nodeId: sim.id, live, ollamaUrl: sim.url, send: postTo(router.url, 1000, () => NODE_TOKEN), collector: simCollector(sim, { chip: "Apple M2 Pro", memoryBandwidthGbps: 200 }) }),
  );
  await eventually(async () => {
    const fleet = (await getJson(`${router.url}/fleet/status`)).nodes;
    return fleet.length === 3 && fleet.every((n: any) => n.status === "online") && fleet.filter((n: any) => n.memory).length === 2;
  }, 5000, "three nodes online, two with their agent's report");
  // Some traffic, tagged, so the analytics pages draw tables and charts rather than their empty states.
  for (const [i, model] of ["qwen3:32b", "llama3.2:3b", "qwen3:32b", "llama3.2:3b", "qwen3:8b", "llama3.2:1b"].entries()) {
    const res = await fetch(`${router.url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "X-Herd-Tags": i % 2 ? "chat-ui" : "batch-job" },
      body: JSON.stringify({ model, stream: false, messages: [{ role: "user", content: `hello ${i}` }] }),
    });
    expect(res.status).toBe(200);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  light = await browser.newContext({ viewport: VIEWPORT, colorScheme: "light" });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const a of agents) a.stop();
  await router?.stop();
  await Promise.all([studio?.stop(), mini?.stop(), air?.stop()]);
});

afterAll(cleanupFile);

/** A page with everything that went wrong on it recorded: console errors, uncaught exceptions, failed or >= 400 requests. */
async function open(name: string, context = light): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.goto(`${router.url}${pathOf(name)}`);
  // Each page script replaces "Loading…" with its content once its data is in.
  await page.waitForSelector("#page > .stack", { timeout: 5000 });
  await page.waitForLoadState("networkidle").catch(() => {}); // the overview's live stream never idles
  return { page, problems };
}

const screenshot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
const settings = () => getJson(`${router.url}/dashboard/api/settings`);

describe("the pages themselves", () => {
  test("/ sends a browser to the dashboard, and answers anyone else as Ollama does: 200 `Ollama is running`", async () => {
    const page = await light.newPage();
    await page.goto(`${router.url}/`);
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    await page.close();
    for (const method of ["GET", "HEAD"]) {
      const res = await fetch(`${router.url}/`, { method, redirect: "manual" });
      expect([method, res.status, res.headers.get("content-type"), res.headers.get("content-length"), await res.text()]).toEqual([method, 200, "text/plain; charset=utf-8", "17", method === "GET" ? "Ollama is running" : ""]);
      const browser = await fetch(`${router.url}/`, { method, redirect: "manual", headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
      expect([method, browser.status, browser.headers.get("location")]).toEqual([method, 302, "/dashboard"]);
    }
  });

  test("no other site may frame them; an asset named like a property of every object is a 404, not a 500", async () => {
    for (const path of ["/dashboard", "/dashboard/health", "/dashboard/settings"]) {
      const res = await fetch(`${router.url}${path}`);
      expect([path, res.status, res.headers.get("x-frame-options"), res.headers.get("content-security-policy")]).toEqual([path, 200, "DENY", "frame-ancestors 'none'"]);
      await res.body?.cancel();
    }
    for (const name of ["__proto__", "constructor", "toString"]) expect((await fetch(`${router.url}/dashboard/assets/${name}`)).status).toBe(404);
  });
});

describe("GET /dashboard/events", () => {
  test("sends a snapshot with every node within 1 s, another 2 s later, and stops when the client goes", async () => {
    // A socket of its own, closed as a tab closing closes it: a fetch's abort may leave its connection open a while.
    const { hostname, port } = new URL(router.url);
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    onCleanup({ run: async () => void socket.destroy() });
    socket.setEncoding("utf8");
    socket.write(`GET /dashboard/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    let raw = "";
    let buffer = "";
    let wake = () => {};
    socket.on("data", (text: string) => {
      raw += text;
      buffer += text;
      wake();
    });
    socket.on("close", () => wake());
    const nextSnapshot = async () => {
      for (;;) {
        const event = buffer.match(/^data: (.*)\n\n/m);
        if (event) {
          buffer = buffer.slice(event.index! + event[0].length);
          return JSON.parse(event[1]!);
        }
        if (socket.destroyed) throw new Error("the stream ended");
        await new Promise<void>((resolve) => (wake = resolve));
      }
    };
    const first = await nextSnapshot();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase()).toMatch(/^http\/1\.1 200 [^]*\r\ncontent-type: text\/event-stream/);
    expect(Object.keys(first).sort()).toEqual(["nodes", "queues", "timestamp"]);
    expect(first.nodes.map((n: any) => n.node_id).sort()).toEqual(["air", "mini", "studio"]);
    expect(first.nodes.find((n: any) => n.node_id === "studio")).toMatchObject({ status: "online", memory: { total_gb: 64 } });
    expect(Object.values(first.queues).map((q: any) => q.model)).toContain("qwen3:32b");
    const second = await nextSnapshot();
    expect(second.timestamp - first.timestamp).toBeGreaterThan(1.5);
    expect(second.timestamp - first.timestamp).toBeLessThan(3);

    const closed = () => router.output().match(/live stream closed/g)?.length ?? 0;
    const before = closed();
    socket.destroy();
    await eventually(async () => closed() === before + 1, 3000, "the stream's timer to stop");
  }, 10_000);
});

describe("every page in chromium", () => {
  for (const name of PAGES) {
    test(`${name} loads with no console error and no failed request${CHARTED.includes(name) ? ", and draws its charts" : ""}`, async () => {
      const { page, problems } = await open(name);
      expect(await page.locator(`nav a[aria-current="page"]`).getAttribute("href")).toBe(pathOf(name));
      expect(await page.locator("#page .notice.error").count()).toBe(0);
      if (CHARTED.includes(name)) expect(await page.locator(".chart canvas").count()).toBeGreaterThan(0);
      await screenshot(page, name);
      expect(problems).toEqual([]);
      await page.close();
    }, 15_000);
  }

  test("dark mode follows the system and the toggle, which is remembered", async () => {
    const dark = await browser.newContext({ viewport: VIEWPORT, colorScheme: "dark" });
    const { page, problems } = await open("overview", dark);
    const theme = () => page.evaluate("document.documentElement.dataset.theme");
    const background = () => page.evaluate("getComputedStyle(document.body).backgroundColor");
    expect(await theme()).toBe("dark");
    await page.waitForSelector('[data-node="studio"]');
    await screenshot(page, "overview-dark");
    const darkBackground = await background();
    await page.click("#theme-toggle");
    expect(await theme()).toBe("light");
    expect(await background()).not.toBe(darkBackground);
    await page.reload();
    expect(await theme()).toBe("light"); // the choice outlives the page, against the system's dark
    expect(problems.filter((p) => !p.includes("/dashboard/events"))).toEqual([]); // the reload cuts the live stream
    await dark.close();
  }, 15_000);
});

describe("acting from the dashboard", () => {
  test("the overview shows each node with its memory and loaded models", async () => {
    const { page, problems } = await open("overview");
    for (const id of ["studio", "mini", "air"]) {
      await page.waitForSelector(`[data-node="${id}"][data-status="online"]`, { timeout: 5000 });
    }
    const studioCard = page.locator('[data-node="studio"]');
    expect(await studioCard.textContent()).toContain("qwen3:32b");
    expect(await studioCard.textContent()).toContain("/ 64 GB");
    expect(await page.locator('[data-node="air"]').textContent()).toContain("not reported (no agent)");
    // What is known of its hardware is only what the config declares: no chip or cores to name.
    expect(await page.locator('[data-node="air"] .node-sub').textContent()).toMatch(/^Ollama [\d.]+ · polled$/);
    // Which config each agent runs: these agents run on the defaults, not the router's file, and the badge says so;
    // the polled node has no agent to say.
    expect(await page.locator('[data-node="studio"] [data-runs="drift"]').textContent({ timeout: 3000 })).toBe("config drift");
    expect(await page.locator('[data-node="air"] [data-runs]').count()).toBe(0);
    // The speeds herd learned from the requests sent at the start, per model, on the node that served them.
    const speeds = await page.locator('[data-node="studio"] [data-speeds]').textContent();
    expect(speeds).toContain("Speeds (tokens/s) · ");
    expect(speeds).toContain("GB/s effective (learned)");
    expect(speeds).toMatch(/qwen3:32b\S*\s*[\d.,]+/);
    // Each node's slots per model and where the figure came from.
    const slots = async (id: string) => page.locator(`[data-node="${id}"] [data-slots]`).textContent({ timeout: 3000 });
    expect([await slots("studio"), await slots("mini"), await slots("air")]).toEqual(["1 per model (Ollama's default)", "2 per model (declared)", "1 per model (learned)"]);
    expect(await page.locator(".live").textContent()).toBe("Live");
    // The store's size and what it keeps (store.traces' defaults).
    const store = page.locator(".stat", { hasText: "Store" });
    await eventually(async () => /^[\d.,]+ MB$/.test((await store.locator(".stat-value").textContent()) ?? ""), 5000, "the store's size shown");
    expect(await store.locator(".stat-hint").textContent()).toMatch(/^\d+ traces, kept 30 days \/ 1,024 MB$/);
    expect(problems).toEqual([]);
    await page.close();
  }, 15_000);

  test("each node card's speeds table fits inside its card, on a wide screen and on a phone's, with no scrolling", async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "light" });
    try {
      for (const context of [light, phone]) {
        const { page, problems } = await open("overview", context);
        await page.waitForSelector('[data-node="studio"] [data-speeds] table', { timeout: 5000 });
        // Per card with a speeds table: how far the table reaches past the card's content box, and how far it scrolls.
        const fits = (await page.evaluate(`[...document.querySelectorAll("[data-node]")].flatMap((card) => {
          const table = card.querySelector("[data-speeds] table");
          if (!table) return [];
          const body = card.querySelector(".node-body");
          const past = table.getBoundingClientRect().right - (body.getBoundingClientRect().right - parseFloat(getComputedStyle(body).paddingRight));
          return [{ node: card.dataset.node, past: Math.max(0, Math.ceil(past)), scrolls: table.parentElement.scrollWidth - table.parentElement.clientWidth }];
        })`)) as { node: string; past: number; scrolls: number }[];
        expect(fits.map((f) => f.node)).toContain("studio");
        expect(fits).toEqual(fits.map((f) => ({ node: f.node, past: 0, scrolls: 0 })));
        expect(problems).toEqual([]);
        await page.close();
      }
    } finally {
      await phone.close();
    }
  }, 15_000);

  test("the overview shows each agent's thermal state, or unknown and why, and the free disk of its models' volume; the Health page says unknown", async () => {
    const { page, problems } = await open("overview");
    const machine = (m: unknown) => fetch(`${studio.url}/_sim`, { method: "POST", body: JSON.stringify({ machine: m }) });
    try {
      const studioCard = page.locator('[data-node="studio"]');
      expect(await studioCard.locator('[data-thermal="nominal"]').textContent({ timeout: 3000 })).toBe("nominal");
      // The sim's one disk holds both model stores (500 GB free of 1000 by default).
      expect(await studioCard.textContent()).toContain("500 GB free · Ollama + Hugging Face");
      expect((await machine({ thermal: "unknown" })).status).toBe(200);
      const unknown = studioCard.locator('[data-thermal="unknown"]');
      expect(await unknown.textContent({ timeout: 3000 })).toBe("unknown: the simulated machine reads no thermal state (POST /_sim machine.thermal)");
      // The polled node has no agent to say: no thermal row rather than a guess.
      expect(await page.locator('[data-node="air"] [data-thermal]').count()).toBe(0);
      // The health answer is cached for 30 s: Refresh runs the checks again.
      const health = await open("health");
      try {
        await health.page.getByRole("button", { name: "Refresh" }).click();
        const finding = health.page.locator('[data-check="thermal"] .check-finding');
        expect(await finding.textContent({ timeout: 3000 })).toBe("studio: thermal state unknown (the simulated machine reads no thermal state (POST /_sim machine.thermal))");
        // The agents run on the defaults, not the router's file (the overview's "config drift" badge): a finding with what to do.
        const drift = health.page.locator('[data-check="config_drift"]');
        expect(await drift.locator(".check-finding").textContent()).toMatch(/^(studio|mini) runs config hash defaults, the router [0-9a-f]{12}; (studio|mini) runs/);
        expect(await drift.locator(".check-fix").textContent()).toContain("What to do: deploy the router's config to");
        expect(health.problems).toEqual([]);
      } finally {
        await health.page.close();
      }
    } finally {
      await machine({});
      await page.close();
    }
    expect(problems).toEqual([]);
  }, 15_000);

  test("a settings toggle changes GET /dashboard/api/settings", async () => {
    expect((await settings()).config.toggles.auto_pull).toBe(true);
    const { page, problems } = await open("settings");
    const toggle = page.locator('[data-setting="auto_pull"] input[role="switch"]');
    expect(await toggle.isChecked()).toBe(true);
    await toggle.click();
    await eventually(async () => (await settings()).config.toggles.auto_pull === false, 3000, "auto_pull off");
    expect((await settings()).config.toggles.vram_fallback).toBe(true);
    await toggle.click();
    await eventually(async () => (await settings()).config.toggles.auto_pull === true, 3000, "auto_pull back on");
    expect(problems).toEqual([]);
    await page.close();
  }, 15_000);

  test("a pin toggle changes GET /dashboard/api/pinned-models", async () => {
    const pinned = async () => (await getJson(`${router.url}/dashboard/api/pinned-models`)).per_node.mini ?? [];
    expect(await pinned()).not.toContain("qwen3:8b");
    const { page, problems } = await open("recommendations");
    const toggle = page.locator('#models [data-node="mini"][data-model="qwen3:8b"] input[role="switch"]');
    await toggle.waitFor({ timeout: 5000 });
    await toggle.click();
    await eventually(async () => (await pinned()).includes("qwen3:8b"), 3000, "qwen3:8b pinned on mini");
    await toggle.click();
    await eventually(async () => !(await pinned()).includes("qwen3:8b"), 3000, "qwen3:8b unpinned");
    expect(problems).toEqual([]);
    await page.close();
  }, 15_000);

  test("a recommendation's Pull button pulls the model onto the simulated node", async () => {
    const recommended = (await getJson(`${router.url}/dashboard/api/recommendations`)).nodes.find((n: any) => n.node_id === "mini").recommendations;
    // One mini lacks and the simulated registry can serve.
    const pick = recommended.find((r: any) => !r.already_available && CATALOG.some((m) => m.name === r.model));
    expect(pick).toBeDefined();
    expect((await getJson(`${mini.url}/_sim`)).models).not.toContain(pick.model);
    const { page, problems } = await open("recommendations");
    const row = page.locator(`#recommendations [data-node="mini"][data-model="${pick.model}"]`);
    await row.getByRole("button", { name: "Pull" }).click();
    await row.getByText("pulled").waitFor({ timeout: 10_000 });
    expect((await getJson(`${mini.url}/_sim`)).models).toContain(pick.model);
    expect(problems).toEqual([]);
    await page.close();
  }, 20_000);

  test("a page of another site changes nothing: its text/plain posts and its form are refused, the dashboard's own calls go on", async () => {
    // The attack: a page the operator opens posts to herd on loopback, where changes need no token, without a preflight.
    const evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          `<form id="f" method="POST" action="${router.url}/dashboard/api/settings" enctype="text/plain"><input name='{"vram_fallback":false,"x":"' value='"}'></form>`,
          { headers: { "content-type": "text/html" } },
        ),
    });
    const before = (await getJson(`${air.url}/_sim`)).models;
    expect(before).toContain("llama3.2:1b");
    // Served as localhost: another site than 127.0.0.1 (and another port of it would be another origin too).
    for (const origin of [`http://localhost:${evil.port}`, `http://127.0.0.1:${evil.port}`]) {
      const page = await light.newPage();
      await page.goto(origin);
      await page.evaluate(async (herd) => {
        const simple = (path: string, body: unknown) => fetch(`${herd}${path}`, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: JSON.stringify(body) });
        await simple("/dashboard/api/settings", { auto_pull: false });
        await simple("/dashboard/api/delete", { node_id: "air", model: "llama3.2:1b" });
        await simple("/api/pull", { model: "qwen3:8b" });
      }, router.url);
      await Promise.all([page.waitForNavigation(), page.evaluate(`document.getElementById("f").submit()`)]);
      expect(await page.textContent("body")).toContain("another site's page");
      await page.close();
    }
    expect((await settings()).config.toggles).toEqual({ auto_pull: true, vram_fallback: true });
    expect((await getJson(`${air.url}/_sim`)).models).toEqual(before);
    await evil.stop(true);

    // The dashboard's own change still goes through (its fetch sends JSON, from herd's own origin).
    const page = await light.newPage();
    await page.goto(`${router.url}/dashboard/settings`);
    const toggle = page.locator('[data-setting="vram_fallback"] input[role="switch"]');
    await toggle.click();
    await eventually(async () => (await settings()).config.toggles.vram_fallback === false, 3000, "vram_fallback off");
    await toggle.click();
    await eventually(async () => (await settings()).config.toggles.vram_fallback === true, 3000, "vram_fallback back on");
    await page.close();
  }, 20_000);

  test("with an admin token set, a change asks for it (again when refused), is then made, and the token is kept for the tab", async () => {
    const ADMIN = "adm-dashboard-5f4e3d2c1b";
    const dir = tmpDir();
    const file = join(dir, "herd.config.json");
    writeFileSync(file, JSON.stringify({ nodes: [{ id: studio.id, ollama: studio.url }], heartbeat: HEARTBEAT, auth: { adminToken: ADMIN } }));
    const guarded = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    const autoPull = async () => (await getJson(`${guarded.url}/dashboard/api/settings`)).config.toggles.auto_pull;
    const page = await light.newPage();
    await page.goto(`${guarded.url}/dashboard/settings`);
    const toggle = page.locator('[data-setting="auto_pull"] input[role="switch"]');
    await toggle.waitFor({ timeout: 5000 });

    await toggle.click();
    const dialog = page.locator("dialog.token-dialog[open]");
    await dialog.waitFor({ timeout: 3000 });
    expect(await dialog.textContent()).toContain("Admin token needed");
    await screenshot(page, "settings-token");
    await dialog.locator("input").fill("not-the-token");
    await dialog.getByRole("button", { name: "Continue" }).click();
    await dialog.getByText("The token given was refused.").waitFor({ timeout: 3000 });
    expect(await autoPull()).toBe(true);
    await dialog.locator("input").fill(ADMIN);
    await dialog.getByRole("button", { name: "Continue" }).click();
    await eventually(async () => (await autoPull()) === false, 3000, "auto_pull off");
    expect(await toggle.isChecked()).toBe(false);

    // The next change goes through with the token the tab keeps: no dialog.
    await toggle.click();
    await eventually(async () => (await autoPull()) === true, 3000, "auto_pull back on");
    expect(await page.locator("dialog.token-dialog").count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.getItem("herd-token"))).toBe(ADMIN);
    await page.close();
    await guarded.stop();
  }, 20_000);

  test("the overview shows a node going down within 5 s, without a reload", async () => {
    const { page, problems } = await open("overview");
    await page.waitForSelector('[data-node="air"][data-status="online"]', { timeout: 5000 });
    await air.stop();
    await page.waitForSelector('[data-node="air"]:not([data-status="online"])', { timeout: 5000 });
    expect(await page.locator('[data-node="air"] .badge.status').textContent()).toMatch(/degraded|offline/);
    expect(await page.locator('[data-node="studio"]').getAttribute("data-status")).toBe("online");
    expect(problems).toEqual([]);
    await page.close();
    // Every page is closed now: every live stream the browser opened has stopped its timer.
    const openStreams = () => [...router.output().matchAll(/live stream (?:opened|closed) \((\d+) open\)/g)].at(-1)?.[1];
    await eventually(async () => openStreams() === "0", 3000, "no live stream left open");
  }, 15_000);
});
