import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { statfs } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { bandwidthForChip } from "../src/core/chips.ts";
import { toGb } from "../src/fleet/node-models.ts";
import {
  parseCpuinfo,
  parseMeminfo,
  parseVmStat,
  pressureFromAvailable,
  pressureFromLevel,
  systemCollector,
  utilizationPct,
} from "../src/node/collectors.ts";

// A 64 GB M-series Mac under load. Active + inactive + speculative = file-backed + anonymous.
const VM_STAT = `Mach Virtual Memory Statistics: (page size of 16384 bytes)
Pages free:                              121344.
Pages active:                           1498211.
Pages inactive:                         1452786.
Pages speculative:                        31203.
Pages throttled:                              0.
Pages wired down:                        801522.
Pages purgeable:                          40118.
"Translation faults":                2487193321.
Pages copy-on-write:                   61830275.
Pages zero filled:                    914204877.
Pages reactivated:                      7351962.
Pages purged:                           3016475.
File-backed pages:                      1183417.
Anonymous pages:                        1798783.
Pages stored in compressor:              905312.
Pages occupied by compressor:            251906.
Decompressions:                        24310952.
Compressions:                          30018874.
Pageins:                               14387236.
Pageouts:                                316524.
Swapins:                                      0.
Swapouts:                                     0.
`;

const MEMINFO = `MemTotal:       32766344 kB
MemFree:         1203456 kB
MemAvailable:   21456788 kB
Buffers:          612340 kB
Cached:         19034512 kB
SwapCached:         1024 kB
Active:         14203344 kB
Inactive:       13998212 kB
Active(anon):    8120332 kB
Inactive(anon):   310216 kB
Active(file):    6083012 kB
Inactive(file): 13687996 kB
Unevictable:       18432 kB
Mlocked:           18432 kB
SwapTotal:       8388604 kB
SwapFree:        8301244 kB
Dirty:              1732 kB
Writeback:             0 kB
AnonPages:       8552868 kB
Mapped:          1400236 kB
Shmem:            402116 kB
KReclaimable:     934120 kB
Slab:            1398876 kB
SReclaimable:     934120 kB
SUnreclaim:       464756 kB
KernelStack:       22880 kB
PageTables:        71244 kB
CommitLimit:    24771776 kB
Committed_AS:   18813404 kB
VmallocTotal:   34359738367 kB
VmallocUsed:       97204 kB
Percpu:            12800 kB
HugePages_Total:       0
HugePages_Free:        0
Hugepagesize:       2048 kB
DirectMap4k:      556820 kB
DirectMap2M:    17176576 kB
DirectMap1G:    16777216 kB
`;

function cpuinfoBlock(processor: number, socket: number, core: number): string {
  return `processor\t: ${processor}
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
stepping\t: 4
cpu MHz\t\t: 2400.000
cache size\t: 28160 KB
physical id\t: ${socket}
siblings\t: 4
core id\t\t: ${core}
cpu cores\t: 2
apicid\t\t: ${processor}
fpu\t\t: yes
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx lm avx avx2 avx512f
bogomips\t: 4800.00
`;
}

// Two sockets, two cores each, two hyperthreads per core: 8 processors, 4 physical cores,
// and core ids that repeat across sockets.
const CPUINFO = [
  cpuinfoBlock(0, 0, 0),
  cpuinfoBlock(1, 0, 1),
  cpuinfoBlock(2, 1, 0),
  cpuinfoBlock(3, 1, 1),
  cpuinfoBlock(4, 0, 0),
  cpuinfoBlock(5, 0, 1),
  cpuinfoBlock(6, 1, 0),
  cpuinfoBlock(7, 1, 1),
].join("\n");

describe("parseVmStat", () => {
  test("counts app memory, wired and compressed as used; free, file cache and purgeable as available", () => {
    expect(parseVmStat(VM_STAT)).toEqual({
      used: (1798783 - 40118 + 801522 + 251906) * 16384,
      available: (121344 + 1183417 + 40118) * 16384,
    });
  });

  test("takes the page size from the header", () => {
    const intel = parseVmStat(VM_STAT.replace("16384", "4096"));
    expect(intel?.available).toBe((121344 + 1183417 + 40118) * 4096);
  });

  test("is null without the header", () => {
    expect(parseVmStat("vm_stat: command not found")).toBeNull();
  });

  test("reads a real Mac's output (4 KiB pages; test/fixtures/macos/SOURCES.md)", () => {
    const text = readFileSync(join(import.meta.dir, "fixtures/macos/vm_stat-4k-pages.txt"), "utf8");
    expect(parseVmStat(text)).toEqual({ used: (464333 - 11820 + 715958 + 0) * 4096, available: (6127229 + 1080348 + 11820) * 4096 });
  });
});

describe("parseMeminfo", () => {
  test("reads MemTotal and MemAvailable in bytes", () => {
    expect(parseMeminfo(MEMINFO)).toEqual({ total: 32766344 * 1024, available: 21456788 * 1024 });
  });

  test("is null when MemAvailable is missing", () => {
    expect(parseMeminfo(MEMINFO.replace(/^MemAvailable:.*\n/m, ""))).toBeNull();
  });
});

describe("parseCpuinfo", () => {
  test("counts distinct (socket, core) pairs across two sockets", () => {
    expect(parseCpuinfo(CPUINFO)).toEqual({ model: "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", cores_physical: 4 });
  });

  test("is null for what an ARM board's cpuinfo leaves out", () => {
    const arm = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\n";
    expect(parseCpuinfo(arm)).toEqual({ model: null, cores_physical: null });
  });
});

describe("pressure", () => {
  test("maps macOS pressure levels", () => {
    expect(pressureFromLevel(1)).toBe("nominal");
    expect(pressureFromLevel(2)).toBe("warning");
    expect(pressureFromLevel(4)).toBe("critical");
    expect(pressureFromLevel(0)).toBeNull();
    expect(pressureFromLevel(3)).toBeNull();
  });

  test("falls back to the share of memory still available", () => {
    expect(pressureFromAvailable({ total: 100, available: 15 })).toBe("nominal");
    expect(pressureFromAvailable({ total: 100, available: 14 })).toBe("warning");
    expect(pressureFromAvailable({ total: 100, available: 5 })).toBe("warning");
    expect(pressureFromAvailable({ total: 100, available: 4 })).toBe("critical");
  });
});

describe("bandwidthForChip", () => {
  test("tells a chip from its Pro, Max and Ultra variants", () => {
    expect(bandwidthForChip("Apple M2")).toBe(100);
    expect(bandwidthForChip("Apple M2 Pro")).toBe(200);
    expect(bandwidthForChip("Apple M2 Max")).toBe(400);
    expect(bandwidthForChip("Apple M2 Ultra")).toBe(800);
  });

  test("knows each generation", () => {
    expect(bandwidthForChip("Apple M1")).toBe(68.25);
    expect(bandwidthForChip("Apple M3 Pro")).toBe(150);
    expect(bandwidthForChip("Apple M3 Ultra")).toBe(819);
    expect(bandwidthForChip("Apple M4 Max")).toBe(546);
    expect(bandwidthForChip("Apple M5")).toBe(153);
  });

  test("reads a virtual machine's brand string", () => {
    expect(bandwidthForChip("Apple M1 (Virtual)")).toBe(68.25);
  });

  test("reads a chip named as a config writes it, without the maker", () => {
    expect(bandwidthForChip("M4 Pro")).toBe(273);
  });

  test("is 0 for chips it doesn't know", () => {
    expect(bandwidthForChip("Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz")).toBe(0);
    expect(bandwidthForChip("Apple M9 Max")).toBe(0);
    expect(bandwidthForChip("")).toBe(0);
  });
});

describe("utilizationPct", () => {
  test("is the busy share of the time between samples, to one decimal", () => {
    expect(utilizationPct({ busy: 100, total: 400 }, { busy: 175, total: 500 })).toBe(75);
    expect(utilizationPct({ busy: 0, total: 0 }, { busy: 1, total: 3 })).toBe(33.3);
  });

  test("is null when no time has passed", () => {
    expect(utilizationPct({ busy: 5, total: 10 }, { busy: 5, total: 10 })).toBeNull();
  });
});

describe("systemCollector on this machine", () => {
  const collector = systemCollector();

  test("hardware is sane and cached", async () => {
    const hardware = await collector.hardware();
    expect(hardware.memory_total_gb).toBeGreaterThan(0);
    expect(hardware.cores_physical).toBeGreaterThanOrEqual(1);
    expect(hardware.cores_physical).toBeLessThanOrEqual(os.cpus().length);
    expect(hardware.chip.length).toBeGreaterThan(0);
    expect(hardware.memory_bandwidth_gbps).toBe(bandwidthForChip(hardware.chip));
    expect(["apple_silicon", "x86_64", "arm64"]).toContain(hardware.arch);
    expect(await collector.hardware()).toBe(hardware);
  });

  test("memory is sane", async () => {
    const memory = await collector.memory();
    expect(memory.total_gb).toBeGreaterThan(0);
    expect(memory.available_gb).toBeGreaterThan(0);
    expect(memory.available_gb).toBeLessThanOrEqual(memory.total_gb);
    expect(memory.used_gb).toBeGreaterThan(0);
    expect(memory.used_gb).toBeLessThanOrEqual(memory.total_gb);
    expect(["nominal", "warning", "critical"]).toContain(memory.pressure);
  });

  test("cpu reports physical cores and utilisation since the last call", async () => {
    const hardware = await collector.hardware();
    const sinceBoot = collector.cpu();
    expect(sinceBoot.cores_physical).toBe(hardware.cores_physical);
    expect(sinceBoot.utilization_pct).toBeGreaterThanOrEqual(0);
    expect(sinceBoot.utilization_pct).toBeLessThanOrEqual(100);

    const until = Date.now() + 200;
    while (Date.now() < until); // keep one core busy so the next sample can't be idle
    const busy = collector.cpu().utilization_pct;
    expect(busy).toBeGreaterThan(0);
    expect(busy).toBeLessThanOrEqual(100);
    expect(Math.round(busy * 10) / 10).toBe(busy);
  });

  test("disks: each model folder on its nearest existing ancestor's filesystem, once per filesystem; disk is Ollama's", async () => {
    const tmp = tmpdir();
    const inTmp = systemCollector({ modelFolders: () => [{ holds: "ollama", path: join(tmp, "no-such-dir-for-herd", "models") }, { holds: "huggingface", path: tmp }] });
    const { disk, disk_volumes } = await inTmp.disks();
    const fs = await statfs(tmp);
    expect(disk_volumes).toEqual([{ holds: ["ollama", "huggingface"], path: join(tmp, "no-such-dir-for-herd", "models"), total_gb: toGb(fs.blocks * fs.bsize), available_gb: expect.any(Number) }]);
    expect(Math.abs(disk_volumes[0]!.available_gb - toGb(fs.bavail * fs.bsize))).toBeLessThan(1);
    expect(disk).toEqual({ total_gb: disk_volumes[0]!.total_gb, available_gb: disk_volumes[0]!.available_gb });
  });
});
