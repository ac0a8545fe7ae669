// What this node keeps of its platform connection, in the data dir: the node's
// Ed25519 key pair and the connection (platform.json), and the last day the usage
// roll-up was accepted (telemetry_state.json). Both hold what only this node's
// operator may read (the private key, the operator's e-mail), so both are written
// 0600, whole (a temporary file renamed over the old), never half.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const PLATFORM_FILE = "platform.json";
export const TELEMETRY_FILE = "telemetry_state.json";

/** The node's identity towards the platform, PEM-encoded: made once, kept across disconnects. */
export interface NodeKeys {
  public_key: string;
  private_key: string;
}

/** What the platform answered when it registered the node. */
export interface Connection {
  node_id: string;
  user_email: string | null;
  user_display_name: string | null;
  platform_url: string;
  connected_at: string;
}

export interface PlatformFile {
  keys: NodeKeys | null;
  connection: Connection | null;
}

export interface TelemetryFile {
  /** The last UTC day (YYYY-MM-DD) the platform accepted (a 2xx, or its 409: already had it). */
  last_sent_day: string | null;
}

export function readPlatformFile(dataDir: string): PlatformFile {
  const read = readJson(join(dataDir, PLATFORM_FILE)) as Partial<PlatformFile>;
  return { keys: read.keys ?? null, connection: read.connection ?? null };
}

export function writePlatformFile(dataDir: string, state: PlatformFile): void {
  writePrivate(dataDir, PLATFORM_FILE, state);
}

export function readTelemetryFile(dataDir: string): TelemetryFile {
  return { last_sent_day: (readJson(join(dataDir, TELEMETRY_FILE)) as Partial<TelemetryFile>).last_sent_day ?? null };
}

export function writeTelemetryFile(dataDir: string, state: TelemetryFile): void {
  writePrivate(dataDir, TELEMETRY_FILE, state);
}

/** The file's JSON object; {} when there is none yet. A file that is not JSON is an error, not a fresh start: it holds the node's key. */
function readJson(file: string): object {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw e;
  }
  const value: unknown = JSON.parse(text);
  if (typeof value !== "object" || value === null) throw new Error(`${file}: expected a JSON object`);
  return value;
}

function writePrivate(dataDir: string, name: string, value: unknown): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, name);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600); // the mode above is masked by the umask
  renameSync(temporary, file);
}
