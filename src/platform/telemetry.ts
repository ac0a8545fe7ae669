// The daily usage roll-up (seed 000, "Daily Usage Telemetry"; docs/platform.md):
// opt-in (telemetry.localSummary) and only while connected, yesterday's per-model
// use is POSTed to {platform_url}/api/telemetry/local-summary once the UTC day is
// past its send time (00:05 plus a jitter), signed with the node's key. The
// payload is built field by field from a whitelist; per-tag counts only with the
// second opt-in (telemetry.includeTags), and only of the clients' own tags, capped. A 409 (the platform has that day) counts
// as sent; the last day sent is kept in the data dir, so a restart sends no twice.
import { sign } from "node:crypto";
import type { Database } from "bun:sqlite";
import { withoutCredentials } from "../config/credentials/secrets.ts";
import type { LiveConfig } from "../config/live.ts";
import { log } from "../log.ts";
import { OTHER_TAG } from "../store/day-tags.ts";
import { dayUsage, type ModelDay } from "../store/day-usage.ts";
import { readTelemetryFile, writeTelemetryFile } from "../store/platform-state.ts";
import { VERSION } from "../version.ts";
import { type Platform, redirectProblem } from "./connection.ts";

export const SUMMARY_PATH = "/api/telemetry/local-summary";
const DAY_MS = 86_400_000;
/** How often the schedule looks at the clock; the send time is met within this. */
const TICK_MS = 60_000;
/** After a failed send, the next try waits this long. */
const RETRY_MS = 15 * 60_000;
/** 00:05 UTC, and then up to half an hour later, so the nodes of the world do not all send at once. */
export const defaultSendAtMs = () => 5 * 60_000 + Math.floor(Math.random() * 30 * 60_000);

export interface SummaryEntry {
  model: string;
  local_requests: number;
  local_prompt_tokens: number;
  local_completion_tokens: number;
  p2p_served_requests: number;
  p2p_served_tokens: number;
  avg_latency_ms: number | null;
  p95_latency_ms: number | null;
  request_count_by_tag?: Record<string, number>;
}

export interface LocalSummary {
  day: string;
  node_id: string;
  agent_version: string;
  entries: SummaryEntry[];
}

/** The tags an entry names, most requested first; the rest of its own tags are summed under OTHER_TAG. */
export const MAX_SUMMARY_TAGS = 50;
/** Tags that say who sent a request, not what for: a person (user:, from the user field or Claude Code's account id) or a client key (key:). Never sent. */
const WHO = /^(user|key):/i;

/** A model's per-tag counts as the roll-up sends them: the clients' own tags only, at most MAX_SUMMARY_TAGS by name. */
function summaryTags(byTag: Record<string, number>): Record<string, number> {
  const own = Object.entries(byTag)
    .filter(([tag]) => !WHO.test(tag))
    .sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1));
  const sent: Record<string, number> = Object.fromEntries(own.slice(0, MAX_SUMMARY_TAGS));
  const rest = own.slice(MAX_SUMMARY_TAGS).reduce((sum, [, n]) => sum + n, 0);
  if (rest) sent[OTHER_TAG] = (sent[OTHER_TAG] ?? 0) + rest;
  return sent;
}

/** The whole payload, and nothing but these fields. */
export function localSummary(day: string, nodeId: string, usage: readonly ModelDay[], includeTags: boolean): LocalSummary {
  const entries = usage.map((m): SummaryEntry => {
    const entry: SummaryEntry = {
      model: m.model,
      local_requests: m.requests,
      local_prompt_tokens: m.prompt_tokens,
      local_completion_tokens: m.completion_tokens,
      // herd serves no other node's users (no P2P): always 0, as the platform's shape has the fields.
      p2p_served_requests: 0,
      p2p_served_tokens: 0,
      avg_latency_ms: m.avg_latency_ms,
      p95_latency_ms: m.p95_latency_ms,
    };
    if (includeTags) entry.request_count_by_tag = summaryTags(m.requests_by_tag);
    return entry;
  });
  return { day, node_id: nodeId, agent_version: VERSION, entries };
}

/** The UTC day before `now`'s, when `now` is past that day's send time; null before it. */
export function dayDue(now: number, sendAtMs: number): string | null {
  if (now % DAY_MS < sendAtMs) return null;
  return new Date(now - DAY_MS).toISOString().slice(0, 10);
}

export interface TelemetryDeps {
  platform: Platform;
  live: LiveConfig;
  store: Database;
  dataDir: string;
  /** When in the UTC day yesterday's roll-up is sent, in ms after midnight. */
  sendAtMs: number;
}

export class Telemetry {
  /** Why the last send failed, until one succeeds (GET /api/platform/status's `error`). */
  lastError: string | null = null;
  private retryAt = 0;
  private running: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Ends a send in flight when the router stops, rather than holding the stop for the send's timeout. */
  private readonly stopping = new AbortController();

  constructor(private readonly deps: TelemetryDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), TICK_MS);
    void this.check();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /** Sends the roll-up if one is due; one send at a time. */
  check(): Promise<void> {
    this.running ??= this.sendDue().finally(() => (this.running = null));
    return this.running;
  }

  private async sendDue(): Promise<void> {
    const { platform, live, store, dataDir, sendAtMs } = this.deps;
    const now = Date.now();
    const { localSummary: enabled, includeTags } = live.config.telemetry;
    const connection = enabled ? platform.connection() : null;
    const day = dayDue(now, sendAtMs);
    if (!connection || !day || now < this.retryAt || this.stopping.signal.aborted) return;
    const last = readTelemetryFile(dataDir).last_sent_day;
    if (last !== null && last >= day) return;
    const body = JSON.stringify(localSummary(day, connection.node_id, dayUsage(store, day), includeTags));
    try {
      const res = await fetch(new URL(SUMMARY_PATH, connection.platform_url), {
        method: "POST",
        headers: { "content-type": "application/json", "x-herd-node-signature": sign(null, Buffer.from(body), platform.keys().private_key).toString("base64") },
        body,
        // The day's usage goes to the platform herd connected to, not wherever a redirect points.
        redirect: "manual",
        signal: AbortSignal.any([AbortSignal.timeout(30_000), this.stopping.signal]),
      });
      void res.body?.cancel().catch(() => {}); // only the status is read
      const redirect = redirectProblem(res);
      if (redirect) throw new Error(`${redirect}; herd sends the roll-up to the connection's platform_url only: connect again at where the platform is`);
      if (!res.ok && res.status !== 409) throw new Error(`the platform answered ${res.status}`);
      writeTelemetryFile(dataDir, { last_sent_day: day });
      this.lastError = null;
      log.info(`usage roll-up for ${day} sent to ${withoutCredentials(connection.platform_url)}${res.status === 409 ? " (the platform already had it)" : ""}`);
    } catch (e) {
      this.retryAt = now + RETRY_MS;
      this.lastError = `the usage roll-up for ${day} was not sent: ${(e as Error).message}`;
      log.warn(`${this.lastError}; retrying in ${RETRY_MS / 60_000} minutes`);
    }
  }
}
