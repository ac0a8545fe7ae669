// What the real-client tests share (clients-*.test.ts): one router process over
// simulated Ollama nodes, started once per file. The router and its data dir
// go with the file (test/helpers.ts); the sims are stopped by stop().
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimNode, type SimNodeOptions, startSimOllama } from "../src/sim/index.ts";
import { eventually, getJson, startRouterProcess, tmpDir } from "./helpers.ts";

export interface ClientFleet {
  /** The router's root, e.g. http://127.0.0.1:PORT (Ollama clients); OpenAI and Anthropic clients add /v1. */
  url: string;
  sims: SimNode[];
  stop(): Promise<void>;
}

export async function startClientFleet(nodes: SimNodeOptions[]): Promise<ClientFleet> {
  const sims = await Promise.all(nodes.map((n) => startSimOllama(n)));
  const stop = async () => {
    await Promise.all(sims.map((s) => s.stop()));
  };
  try {
    const dir = tmpDir();
    const file = join(dir, "herd.config.ts");
    const entries = sims.map((s) => JSON.stringify({ id: s.id, ollama: s.url }));
    writeFileSync(file, `export default { nodes: [${entries.join(", ")}] };\n`);
    const router = await startRouterProcess(["serve", "--config", file, "--port", "0", "--host", "127.0.0.1", "--data-dir", join(dir, "data")]);
    await eventually(async () => (await getJson(`${router.url}/fleet/status`)).nodes.every((n: any) => n.status === "online"), 5000, "every node online");
    return { url: router.url, sims, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

interface Exchange {
  request: string;
  response: string;
}

/**
 * A fetch for a client library that keeps what went over the wire, so a
 * failing assertion can show the bytes herd sent (describe()), and explain()
 * adds them to a library's own error.
 */
export class Wire {
  readonly exchanges: Exchange[] = [];

  readonly fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    const exchange: Exchange = { request: `${init?.method ?? "GET"} ${new URL(url).pathname} ${typeof init?.body === "string" ? init.body : ""}`, response: "(no answer)" };
    this.exchanges.push(exchange);
    const res = await fetch(input, init);
    exchange.response = `${res.status} ${res.headers.get("content-type") ?? ""} (reading)`;
    void res
      .clone()
      .text()
      .then((text) => (exchange.response = `${res.status} ${res.headers.get("content-type") ?? ""}\n${text}`));
    return res;
  }) as typeof fetch;

  /** The last few exchanges, trimmed. */
  describe(last = 2): string {
    // A stream's end (finish reason, usage) matters as much as its start.
    const trim = (s: string) => (s.length > 1600 ? `${s.slice(0, 600)} … ${s.slice(-1000)}` : s);
    return this.exchanges
      .slice(-last)
      .map((e) => `>> ${trim(e.request)}\n<< ${trim(e.response)}`)
      .join("\n");
  }

  /** Runs a client call; if it throws, the error also says what went over the wire. */
  async explain<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      const err = e as Error & { responseBody?: string };
      throw new Error(`${what}: ${err?.message ?? String(e)}${err?.responseBody ? `\nresponse body: ${err.responseBody}` : ""}\n${this.describe()}`, { cause: e });
    }
  }
}
