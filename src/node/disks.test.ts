// The volumes of a node's model folders, over a filesystem the test describes: which folders
// exist, on which device, with how much space.
import { expect, test } from "bun:test";
import { type FsProbe, modelVolumes } from "./disks.ts";

const GiB = 1024 ** 3;

/** Existing paths, each on a device; each device's size and free space in GiB. */
function fakeFs(paths: Record<string, number>, devices: Record<number, [number, number]>): FsProbe & { measured: string[] } {
  const measured: string[] = [];
  return {
    measured,
    async device(path) {
      const device = paths[path];
      if (device === undefined) throw new Error(`ENOENT: ${path}`);
      return device;
    },
    async space(path) {
      measured.push(path);
      const [total, available] = devices[paths[path]!]!;
      return { total: total * GiB, available: available * GiB };
    },
  };
}

test("folders on one filesystem are one volume holding both, measured once", async () => {
  const fs = fakeFs({ "/": 1, "/Users/ann/.ollama/models": 1, "/Users/ann/.cache/huggingface/hub": 1 }, { 1: [994.7, 412.25] });
  const volumes = await modelVolumes(
    [
      { holds: "ollama", path: "/Users/ann/.ollama/models" },
      { holds: "huggingface", path: "/Users/ann/.cache/huggingface/hub" },
    ],
    fs,
  );
  expect(volumes).toEqual([{ holds: ["ollama", "huggingface"], path: "/Users/ann/.ollama/models", total_gb: 994.7, available_gb: 412.3 }]);
  expect(fs.measured).toEqual(["/Users/ann/.ollama/models"]);
});

test("folders on two filesystems are two volumes, in the folders' order", async () => {
  const fs = fakeFs({ "/": 1, "/Users/ann": 1, "/Volumes/Models/ollama": 2 }, { 1: [460, 30], 2: [3726, 3001] });
  const volumes = await modelVolumes(
    [
      { holds: "ollama", path: "/Volumes/Models/ollama" },
      { holds: "huggingface", path: "/Users/ann/.cache/huggingface/hub" },
    ],
    fs,
  );
  expect(volumes).toEqual([
    { holds: ["ollama"], path: "/Volumes/Models/ollama", total_gb: 3726, available_gb: 3001 },
    { holds: ["huggingface"], path: "/Users/ann/.cache/huggingface/hub", total_gb: 460, available_gb: 30 },
  ]);
  // The hub cache does not exist yet: its nearest existing ancestor is what a download would fill.
  expect(fs.measured).toEqual(["/Volumes/Models/ollama", "/Users/ann"]);
});

test("a folder on a filesystem nothing can be read of is left out", async () => {
  const none: FsProbe = { device: async () => Promise.reject(new Error("EACCES")), space: async () => ({ total: 0, available: 0 }) };
  expect(await modelVolumes([{ holds: "ollama", path: "/Volumes/Gone/models" }], none)).toEqual([]);
  const noSpace = fakeFs({ "/": 1 }, {});
  noSpace.space = async () => Promise.reject(new Error("EIO"));
  expect(await modelVolumes([{ holds: "ollama", path: "/Users/ann/.ollama/models" }], noSpace)).toEqual([]);
});
