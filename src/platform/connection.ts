// The node's opt-in connection to a coordination platform (seed 000, "Platform
// Connection"; docs/platform.md). Connecting registers the node and sends only
// the operator token, the node's Ed25519 public key, a benchmark result and the
// node name (and the region, when the operator gives one); nothing else leaves
// the machine. Disconnecting forgets the connection, keeps the key pair, and
// tells the platform nothing.
import { generateKeyPairSync } from "node:crypto";
import { hostname } from "node:os";
import type { Database } from "bun:sqlite";
import { withoutCredentials } from "../config/credentials/secrets.ts";
import { AnswerTooLarge, responseText } from "../core/capped-body.ts";
import { shortLine } from "../core/printable.ts";
import { listRuns } from "../store/benchmarks.ts";
import { type Connection, type NodeKeys, PLATFORM_FILE, readPlatformFile, writePlatformFile } from "../store/platform-state.ts";

/** The error codes of POST /api/platform/connect, with their statuses (seed 000). */
export const CONNECT_ERRORS = {
  invalid_token: 400,
  registration_failed: 400,
  platform_unreachable: 502,
  internal_error: 500,
} as const;

export const TOKEN_SHAPE = "operator_token: expected a token starting with herd_";

export type ConnectErrorCode = keyof typeof CONNECT_ERRORS;

export class ConnectError extends Error {
  constructor(
    readonly code: ConnectErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ConnectAsk {
  operator_token: string;
  platform_url: string;
  node_name?: string;
  region?: string;
}

/** Where a platform registers a node. */
export const REGISTER_PATH = "/api/nodes/register";
/** How long the platform gets to answer a registration. */
const REGISTER_TIMEOUT_MS = 15_000;
/** A registration's answer is three short strings: far more than that is not one, and is not read on. */
export const PLATFORM_ANSWER_BYTES = 64 * 1024;
/** The platform's id for the node goes back in every roll-up and into the log: a plain id (a UUID is 36). */
const NODE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** The operator's e-mail and name are only shown: kept at most this long, without control characters. */
const MAX_SHOWN_CHARS = 256;
/** The platform's own words in a refusal: they end up in an answer and a log. */
const MAX_REASON_CHARS = 200;

export class Platform {
  constructor(
    private readonly dataDir: string,
    private readonly store: Database,
  ) {}

  /** Why platform.json cannot be read, when it cannot: until it is fixed or removed, the node counts as not connected and sends nothing. */
  problem: string | null = null;

  connection(): Connection | null {
    try {
      const { connection } = readPlatformFile(this.dataDir);
      this.problem = null;
      return connection;
    } catch (e) {
      this.problem = `${PLATFORM_FILE} in the data dir cannot be read (${(e as Error).message}); fix or remove it (it holds this node's key pair), then connect again`;
      return null;
    }
  }

  /** The node's key pair, made the first time it is needed and kept from then on. */
  keys(): NodeKeys {
    const state = readPlatformFile(this.dataDir);
    if (state.keys) return state.keys;
    const pair = generateKeyPairSync("ed25519", {
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
    });
    const keys = { public_key: pair.publicKey, private_key: pair.privateKey };
    writePlatformFile(this.dataDir, { ...state, keys });
    return keys;
  }

  async connect(ask: ConnectAsk): Promise<Connection> {
    if (!ask.operator_token.startsWith("herd_")) throw new ConnectError("invalid_token", TOKEN_SHAPE);
    const body: Record<string, unknown> = {
      operator_token: ask.operator_token,
      public_key: this.keys().public_key,
      benchmark: this.benchmark(),
      node_name: ask.node_name ?? hostname(),
    };
    if (ask.region !== undefined) body.region = ask.region;
    const registered = await register(ask.platform_url, body);
    const connection: Connection = { ...registered, platform_url: ask.platform_url, connected_at: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
    writePlatformFile(this.dataDir, { ...readPlatformFile(this.dataDir), connection });
    return connection;
  }

  /** Idempotent: forgetting a connection there is none of is no error. */
  disconnect(): void {
    // An unreadable file is left for the operator (it may still hold the key); the node sends nothing while it is.
    if (this.connection()) writePlatformFile(this.dataDir, { ...readPlatformFile(this.dataDir), connection: null });
  }

  /** The newest benchmark run's throughput: the platform's hint of this node's hardware class; null before any run. */
  private benchmark() {
    const run = listRuns(this.store, 1)[0];
    if (!run) return null;
    return { tokens_per_sec: run.tokens_per_sec, requests_per_sec: run.requests_per_sec, latency_p50_ms: run.latency_p50_ms, timestamp: run.timestamp };
  }
}

type Registered = Pick<Connection, "node_id" | "user_email" | "user_display_name">;

async function register(platformUrl: string, body: Record<string, unknown>): Promise<Registered> {
  let res: Response;
  try {
    // The operator token is in the body: it goes to platform_url and nowhere a redirect points.
    res = await fetch(new URL(REGISTER_PATH, platformUrl), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(REGISTER_TIMEOUT_MS),
    });
  } catch (e) {
    throw new ConnectError("platform_unreachable", `cannot reach the platform at ${platformUrl}: ${(e as Error).message}`);
  }
  const redirect = redirectProblem(res);
  if (redirect) throw new ConnectError("registration_failed", `${redirect}: herd sends the operator token to platform_url only; set platform_url to where the platform is`);
  if (res.status >= 500) throw new ConnectError("platform_unreachable", `the platform at ${platformUrl} answered ${res.status}`);
  if (res.status === 401 || res.status === 403) throw new ConnectError("invalid_token", `the platform rejected the operator token (${res.status})`);
  if (!res.ok) throw new ConnectError("registration_failed", `the platform refused the registration (${res.status}): ${await reason(res)}`);
  const text = await platformText(res);
  if (text === null) throw new ConnectError("registration_failed", `the platform's answer is over ${PLATFORM_ANSWER_BYTES / 1024} KiB`);
  let answer: Record<string, unknown> | null = null;
  try {
    answer = JSON.parse(text) as Record<string, unknown> | null;
  } catch {}
  if (typeof answer?.node_id !== "string" || !answer.node_id) throw new ConnectError("registration_failed", "the platform's answer named no node_id");
  if (!NODE_ID.test(answer.node_id)) {
    throw new ConnectError("registration_failed", `the platform's node_id: expected 1 to 128 letters, digits and . _ : - (got ${answer.node_id.length} characters)`);
  }
  const shown = (field: string) => (typeof answer[field] === "string" ? shortLine(answer[field] as string, MAX_SHOWN_CHARS) : null);
  return { node_id: answer.node_id, user_email: shown("user_email"), user_display_name: shown("user_display_name") };
}

/** What is wrong with an answer that is a redirect (a 3xx; fetch was told not to follow it), or null. */
export function redirectProblem(res: Response): string | null {
  if (res.status < 300 || res.status >= 400) return null;
  const to = res.headers.get("location");
  return `the platform answered a redirect (${res.status})${to ? ` to ${shortLine(withoutCredentials(to), MAX_REASON_CHARS)}` : ""}`;
}

/** The platform's answer as text, or null when it is over PLATFORM_ANSWER_BYTES (no more of it is read). */
async function platformText(res: Response): Promise<string | null> {
  try {
    return await responseText(res, { bytes: PLATFORM_ANSWER_BYTES, setting: "fixed" });
  } catch (e) {
    if (e instanceof AnswerTooLarge) return null;
    throw new ConnectError("platform_unreachable", `the platform's answer broke off: ${(e as Error).message}`);
  }
}

/** The platform's own words, if it gave any, cut short and without control characters: they end up in an answer and a log. */
async function reason(res: Response): Promise<string> {
  const text = await platformText(res).catch(() => "");
  if (text === null) return `an answer over ${PLATFORM_ANSWER_BYTES / 1024} KiB`;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; detail?: unknown };
    const said = parsed.error ?? parsed.detail;
    if (typeof said === "string") return shortLine(said, MAX_REASON_CHARS);
  } catch {}
  return shortLine(text, MAX_REASON_CHARS) || "no reason given";
}
