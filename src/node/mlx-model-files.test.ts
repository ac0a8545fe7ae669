import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trainedContext } from "./mlx-model-files.ts";

const dir = mkdtempSync(join(tmpdir(), "herd-model-files-"));
const hub = join(dir, "hub");
const saved = process.env.HF_HUB_CACHE;
process.env.HF_HUB_CACHE = hub;
afterAll(() => {
  if (saved === undefined) delete process.env.HF_HUB_CACHE;
  else process.env.HF_HUB_CACHE = saved;
  rmSync(dir, { recursive: true, force: true });
});

const write = (path: string, text: string) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
};
const snapshot = (repo: string, commit: string, config: unknown) => write(join(hub, `models--${repo.replace("/", "--")}`, "snapshots", commit, "config.json"), JSON.stringify(config));

test("the trained context: config.json's max_position_embeddings, or its text_config's, in a local folder or the hub cache's snapshot of main", async () => {
  write(join(dir, "local", "config.json"), JSON.stringify({ max_position_embeddings: 40960 }));
  expect(await trainedContext(join(dir, "local"))).toBe(40960);

  snapshot("org/vlm", "old", { text_config: { max_position_embeddings: 8192 } });
  snapshot("org/vlm", "new", { text_config: { max_position_embeddings: 262144 } });
  write(join(hub, "models--org--vlm", "refs", "main"), "new\n");
  expect(await trainedContext("org/vlm")).toBe(262144);
  // No refs/main: any snapshot.
  snapshot("org/bare", "only", { max_position_embeddings: 32768 });
  expect(await trainedContext("org/bare")).toBe(32768);
});

test("unknown: not downloaded yet, no such key, or not a context a heartbeat may carry", async () => {
  expect(await trainedContext("org/not-downloaded")).toBeNull();
  snapshot("org/no-key", "a", { hidden_size: 4096 });
  expect(await trainedContext("org/no-key")).toBeNull();
  snapshot("org/absurd", "a", { max_position_embeddings: 2 ** 40 });
  expect(await trainedContext("org/absurd")).toBeNull();
  write(join(hub, "models--org--broken", "snapshots", "a", "config.json"), "{ not json");
  expect(await trainedContext("org/broken")).toBeNull();
});
