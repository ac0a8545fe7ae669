// The free disk that matters on a node: that of the volumes its models are on (Ollama's store,
// the Hugging Face cache), which need not be the volume herd runs from. Each folder is measured
// on the filesystem of its nearest existing ancestor (a folder not made yet fills that one once
// a download makes it), and folders on one filesystem are reported once.
import { stat, statfs } from "node:fs/promises";
import { dirname } from "node:path";
import type { DiskVolume } from "../fleet/heartbeat.ts";
import { toGb } from "../fleet/node-models.ts";

export interface ModelFolder {
  holds: string;
  path: string;
}

/** What a filesystem call on a path gives; a seam for tests. */
export interface FsProbe {
  /** The id of the device (filesystem) the path is on; throws when the path does not exist. */
  device(path: string): Promise<number>;
  /** Its size and the space an unprivileged user may still write, in bytes. */
  space(path: string): Promise<{ total: number; available: number }>;
}

const realFs: FsProbe = {
  device: async (path) => (await stat(path)).dev,
  async space(path) {
    const fs = await statfs(path);
    return { total: fs.blocks * fs.bsize, available: fs.bavail * fs.bsize };
  },
};

/** The path itself when it exists, else its nearest existing ancestor; null when not even the root answers. */
async function nearestExisting(path: string, fs: FsProbe): Promise<{ path: string; device: number } | null> {
  for (let at = path; ; at = dirname(at)) {
    const device = await fs.device(at).catch(() => null);
    if (device !== null) return { path: at, device };
    if (dirname(at) === at) return null;
  }
}

/** One volume per filesystem the folders are on, in the folders' order; a folder nothing can be read of is left out. */
export async function modelVolumes(folders: ModelFolder[], fs: FsProbe = realFs): Promise<DiskVolume[]> {
  const byDevice = new Map<number, DiskVolume>();
  for (const folder of folders) {
    const found = await nearestExisting(folder.path, fs);
    if (!found) continue;
    const known = byDevice.get(found.device);
    if (known) {
      known.holds.push(folder.holds);
      continue;
    }
    const space = await fs.space(found.path).catch(() => null);
    if (space) byDevice.set(found.device, { holds: [folder.holds], path: folder.path, total_gb: toGb(space.total), available_gb: toGb(space.available) });
  }
  return [...byDevice.values()];
}
