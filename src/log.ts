// One line per event on stderr, so stdout stays free for command output
// (`herd schema > herd.schema.json`). Never pass request bodies or secrets here.
type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };
const threshold = order[(process.env.HERD_LOG_LEVEL as Level) ?? "info"] ?? 1;

function write(level: Level, message: string): void {
  if (order[level] < threshold) return;
  const time = new Date().toISOString().slice(11, 19);
  process.stderr.write(`${time} ${level.padEnd(5)} ${message}\n`);
}

export const log = {
  debug: (m: string) => write("debug", m),
  info: (m: string) => write("info", m),
  warn: (m: string) => write("warn", m),
  error: (m: string) => write("error", m),
};
