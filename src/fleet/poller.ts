// The router's own look at agentless nodes: each heartbeat interval it asks
// their Ollama what is loaded and on disk, as an agent would have reported.
// The asking is the Ollama backend's (backends/ollama.ts:probeOllama), given
// by the runtime: the fleet decides when and whom to poll, not how.
import type { LiveConfig } from "../config/live.ts";
import { nodeAnswerCap } from "../config/schema.ts";
import type { AnswerCap } from "../core/capped-body.ts";
import type { OllamaSection } from "./heartbeat.ts";
import type { Registry } from "./registry.ts";

/** What an Ollama server at `url` holds right now, each answer read up to `cap`; never throws: an unreachable server says why. */
export type ProbeOllama = (url: string, timeoutMs: number, cap: AnswerCap) => Promise<OllamaSection>;

export function startPoller(registry: Registry, live: LiveConfig, probeOllama: ProbeOllama): { stop(): void; pollNow(): Promise<void> } {
  let timer: Timer | null = null;
  let stopped = false;
  const pollNow = async () => {
    const { connectMs } = live.config.timeouts;
    const cap = nodeAnswerCap(live.config);
    await Promise.all(registry.pollTargets().map(async (t) => registry.polled(t.id, await probeOllama(t.url, connectMs, cap))));
  };
  // Re-armed after each round so a slow node never stacks polls, and a new interval applies at once.
  const loop = async () => {
    await pollNow();
    if (!stopped) timer = setTimeout(loop, live.config.heartbeat.intervalMs);
  };
  const ticker = setInterval(() => registry.tick(), 1000);
  void loop();
  return {
    pollNow,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      clearInterval(ticker);
    },
  };
}
