// `npm run compile`: the standalone herd binaries, one file each, in dist/.
// Usage: bun compile/build.ts [target …]   (default: every target below)
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const TARGETS: Record<string, { bun: string; magic: string }> = {
  // Mach-O 64-bit magic, then CPU type arm64.
  "darwin-arm64": { bun: "bun-darwin-arm64", magic: "cffaedfe0c000001" },
  // ELF, 64-bit, little-endian.
  "linux-x64": { bun: "bun-linux-x64", magic: "7f454c460201" },
};

/** The target this machine runs, if herd ships one for it. */
export const HOST_TARGET = `${process.platform}-${process.arch}`;

const root = join(import.meta.dir, "..");

export async function compile(target: string): Promise<string> {
  const spec = TARGETS[target];
  if (!spec) throw new Error(`unknown target "${target}"; one of: ${Object.keys(TARGETS).join(", ")}`);
  mkdirSync(join(root, "dist"), { recursive: true });
  const outfile = join(root, "dist", `herd-${target}`);
  // The trace writer's and the token counter's worker threads are entrypoints of their own: Bun bundles workers only when
  // listed. So is the OTLP exporter, loaded only when telemetry.otlp is set (src/runtime.ts).
  const proc = Bun.spawn(
    [process.execPath, "build", "--compile", `--target=${spec.bun}`, join(root, "src/cli.ts"), join(root, "src/store/trace-worker.ts"), join(root, "src/core/token-worker.ts"), join(root, "src/pipeline/otlp.ts"), "--outfile", outfile],
    { cwd: root, stdout: "inherit", stderr: "inherit" },
  );
  if ((await proc.exited) !== 0) throw new Error(`bun build --compile for ${target} failed`);
  const header = Buffer.from(await Bun.file(outfile).slice(0, spec.magic.length / 2).arrayBuffer()).toString("hex");
  if (header !== spec.magic) throw new Error(`${outfile} is not a ${target} executable (header ${header})`);
  return outfile;
}

if (import.meta.main) {
  const targets = process.argv.slice(2);
  for (const t of targets.length ? targets : Object.keys(TARGETS)) console.log(`built ${await compile(t)}`);
}
