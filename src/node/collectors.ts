import os from "node:os";
import { readFile } from "node:fs/promises";
import { bandwidthForChip } from "../core/chips.ts";
import type { DiskVolume, ThermalReading } from "../fleet/heartbeat.ts";
// toGb: GiB, so a 64 GB Mac reports 64 as macOS does.
import { toGb } from "../fleet/node-models.ts";
import { type ModelFolder, modelVolumes } from "./disks.ts";
import { hfHubCache, ollamaModelsDir } from "./model-dirs.ts";
import { macThermalState, type ReadThermalState, thermalReading } from "./thermal.ts";

export interface CpuInfo { cores_physical: number; utilization_pct: number }
export interface MemoryInfo { total_gb: number; used_gb: number; available_gb: number; pressure: Pressure }
export interface HardwareInfo { memory_total_gb: number; cores_physical: number; chip: string; memory_bandwidth_gbps: number; arch: "apple_silicon" | "x86_64" | "arm64" }
/** Seed 000's `disk` (the volume of Ollama's models) and every volume the node's models are on. */
export interface DiskReport { disk: { total_gb: number; available_gb: number }; disk_volumes: DiskVolume[] }
/** An embedding runtime and how many of its models have weights on disk. */
export interface EmbeddingStatus { backend_available: boolean; cached_model_count: number }
/** Embedding backends beside Ollama (seed 000's heartbeat fields); null: none (text_embedding: the server is not running). */
export interface EmbeddingBackends {
  vision_embedding_status: EmbeddingStatus | null;
  text_embedding: { models_available: { name: string; dimensions?: number; cached?: boolean }[]; processing: boolean } | null;
  text_embedding_port: number | null;
  text_embedding_status: EmbeddingStatus | null;
}
export interface SystemCollector {
  cpu(): CpuInfo;
  memory(): Promise<MemoryInfo>;
  /** Cached after the first call. */
  hardware(): Promise<HardwareInfo>;
  disks(): Promise<DiskReport>;
  thermal(): Promise<ThermalReading>;
  /** Only collectors of machines that run embedding backends report them. */
  embedding?(): Promise<EmbeddingBackends>;
}

export type Pressure = "nominal" | "warning" | "critical";
export interface MemoryBytes { total: number; available: number }
export interface CpuTimes { busy: number; total: number }

const COMMAND_TIMEOUT_MS = 2000;

/** `vm_stat` output to used and available bytes, counted the way Activity Monitor counts them. */
export function parseVmStat(text: string): { used: number; available: number } | null {
  const pageSize = Number(/page size of (\d+) bytes/.exec(text)?.[1]);
  if (!pageSize) return null;
  const pages = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^"?([^":]+)"?:\s+(\d+)\.?\s*$/.exec(line);
    if (match) pages.set(match[1]!, Number(match[2]));
  }
  const bytes = (name: string) => (pages.get(name) ?? 0) * pageSize;
  // Used = app memory (anonymous minus purgeable) + wired + compressed. Inactive pages are not
  // all reclaimable: many are app memory that would have to be compressed or swapped first.
  return {
    used: bytes("Anonymous pages") - bytes("Pages purgeable") + bytes("Pages wired down") + bytes("Pages occupied by compressor"),
    available: bytes("Pages free") + bytes("File-backed pages") + bytes("Pages purgeable"),
  };
}

/** /proc/meminfo to total and available bytes. */
export function parseMeminfo(text: string): MemoryBytes | null {
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  const total = kib("MemTotal");
  const available = kib("MemAvailable");
  return Number.isNaN(total) || Number.isNaN(available) ? null : { total, available };
}

/** /proc/cpuinfo to the CPU model and the number of physical cores, each null when the file doesn't say. */
export function parseCpuinfo(text: string): { model: string | null; cores_physical: number | null } {
  const model = /^model name\s*:\s*(.+)$/m.exec(text)?.[1]?.trim() || null;
  const cores = new Set<string>();
  for (const block of text.split(/\n\s*\n/)) {
    const socket = /^physical id\s*:\s*(\d+)/m.exec(block)?.[1];
    const core = /^core id\s*:\s*(\d+)/m.exec(block)?.[1];
    if (socket !== undefined && core !== undefined) cores.add(`${socket}:${core}`);
  }
  return { model, cores_physical: cores.size || null };
}

/** `kern.memorystatus_vm_pressure_level` to a pressure; null for a level macOS doesn't define. */
export function pressureFromLevel(level: number): Pressure | null {
  return level === 1 ? "nominal" : level === 2 ? "warning" : level === 4 ? "critical" : null;
}

export function pressureFromAvailable({ total, available }: MemoryBytes): Pressure {
  const ratio = available / total;
  return ratio < 0.05 ? "critical" : ratio < 0.15 ? "warning" : "nominal";
}

function cpuTimes(): CpuTimes {
  let busy = 0;
  let total = 0;
  for (const { times } of os.cpus()) {
    busy += times.user + times.nice + times.sys + times.irq;
    total += times.user + times.nice + times.sys + times.irq + times.idle;
  }
  return { busy, total };
}

/** Busy share of the CPU time between two samples, 0–100 with one decimal; null when no time passed. */
export function utilizationPct(before: CpuTimes, after: CpuTimes): number | null {
  const total = after.total - before.total;
  if (total <= 0) return null;
  const pct = ((after.busy - before.busy) / total) * 100;
  return Math.round(Math.min(100, Math.max(0, pct)) * 10) / 10;
}

async function run(cmd: string[]): Promise<string | null> {
  try {
    const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "ignore", timeout: COMMAND_TIMEOUT_MS });
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return code === 0 ? out.trim() : null;
  } catch {
    return null;
  }
}

const sysctl = (name: string) => run(["sysctl", "-n", name]);

async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return null;
  }
}

function positive(text: string | null): number | null {
  const n = Number(text);
  return text && Number.isFinite(n) && n > 0 ? n : null;
}

async function probeHardware(): Promise<HardwareInfo> {
  const fallbackChip = os.cpus()[0]?.model.trim() || "unknown";
  let chip = fallbackChip;
  let cores: number | null = null;
  let memory: number | null = null;
  if (process.platform === "darwin") {
    const [brand, physical, memsize] = await Promise.all([sysctl("machdep.cpu.brand_string"), sysctl("hw.physicalcpu"), sysctl("hw.memsize")]);
    chip = brand || fallbackChip;
    cores = positive(physical);
    memory = positive(memsize);
  } else if (process.platform === "linux") {
    const [cpuinfo, meminfo] = await Promise.all([readText("/proc/cpuinfo"), readText("/proc/meminfo")]);
    const parsed = parseCpuinfo(cpuinfo ?? "");
    chip = parsed.model ?? fallbackChip;
    cores = parsed.cores_physical;
    memory = parseMeminfo(meminfo ?? "")?.total ?? null;
  }
  // Bun on Rosetta reports x64, but the machine underneath is still Apple Silicon.
  const appleSilicon = process.platform === "darwin" && /^Apple M/.test(chip);
  return {
    memory_total_gb: toGb(memory ?? os.totalmem()),
    cores_physical: cores ?? os.cpus().length,
    chip,
    memory_bandwidth_gbps: bandwidthForChip(chip),
    arch: appleSilicon ? "apple_silicon" : process.arch === "arm64" ? "arm64" : "x86_64",
  };
}

async function probeMemory(totalGb: number): Promise<MemoryInfo> {
  let bytes: MemoryBytes = { total: os.totalmem(), available: os.freemem() };
  let used = bytes.total - bytes.available;
  let pressure: Pressure | null = null;
  if (process.platform === "darwin") {
    const [vmStat, level] = await Promise.all([run(["vm_stat"]), sysctl("kern.memorystatus_vm_pressure_level")]);
    const counted = parseVmStat(vmStat ?? "");
    if (counted) {
      const total = totalGb * 1024 ** 3;
      bytes = { total, available: Math.min(counted.available, total) };
      used = Math.min(counted.used, total);
    }
    pressure = pressureFromLevel(Number(level));
  } else if (process.platform === "linux") {
    const meminfo = parseMeminfo((await readText("/proc/meminfo")) ?? "");
    if (meminfo) {
      bytes = meminfo;
      used = meminfo.total - meminfo.available;
    }
  }
  return {
    total_gb: toGb(bytes.total),
    used_gb: toGb(used),
    available_gb: toGb(bytes.available),
    pressure: pressure ?? pressureFromAvailable(bytes),
  };
}

/** What the collector reads the machine through; the defaults are the real ones, tests give their own. */
export interface CollectorSeams {
  thermalState?: ReadThermalState;
  /** The folders models are kept in, read at each heartbeat. */
  modelFolders?: () => ModelFolder[];
}

const modelFolders = (): ModelFolder[] => [
  { holds: "ollama", path: ollamaModelsDir() },
  { holds: "huggingface", path: hfHubCache() },
];

/** Seed 000's `disk` is Ollama's volume (a pull fills it); 0 GB when nothing could be read of it. */
export function diskReport(volumes: DiskVolume[]): DiskReport {
  const ollama = volumes.find((v) => v.holds.includes("ollama"));
  return { disk: { total_gb: ollama?.total_gb ?? 0, available_gb: ollama?.available_gb ?? 0 }, disk_volumes: volumes };
}

/** Collects what a heartbeat says about this machine. No method throws: failed probes fall back to node:os. */
export function systemCollector(seams: CollectorSeams = {}): SystemCollector {
  let hardware: Promise<HardwareInfo> | undefined;
  // cpu() is synchronous, so it can only report the probed physical core count once hardware() has run.
  let cores = os.cpus().length;
  let lastTimes: CpuTimes = { busy: 0, total: 0 };
  let lastPct = 0;

  const collector: SystemCollector = {
    cpu() {
      const now = cpuTimes();
      const pct = utilizationPct(lastTimes, now);
      if (pct !== null) {
        lastTimes = now;
        lastPct = pct;
      }
      return { cores_physical: cores, utilization_pct: lastPct };
    },
    hardware() {
      hardware ??= probeHardware().then((info) => {
        cores = info.cores_physical;
        return info;
      });
      return hardware;
    },
    async memory() {
      return probeMemory((await collector.hardware()).memory_total_gb);
    },
    async thermal() {
      return thermalReading(seams.thermalState ?? macThermalState);
    },
    async disks() {
      return diskReport(await modelVolumes((seams.modelFolders ?? modelFolders)()));
    },
  };
  return collector;
}
