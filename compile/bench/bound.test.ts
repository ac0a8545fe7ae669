import { describe, expect, test } from "bun:test";
import { bestMs, verdict, type Work, workOf } from "./bound.ts";
import type { MacSim } from "./fleet.ts";
import type { Job } from "./workload.ts";

// llama3.2:3b is 3.21e9 weights at 4.85 bits: 1.9460625 GB. At 100 GB/s a sim decodes at 60% of 100 / 1.946 tokens a
// second, one token every 32.434375 ms; at 400 GB/s every 8.10859375 ms. Prefill takes a tenth of that per token.
const small = (over: Partial<MacSim> = {}): MacSim => ({ id: "small", memoryGb: 16, memoryBandwidthGbps: 100, loadTimeMs: 1000, diskGbps: 2, models: ["llama3.2:3b", "nomic-embed-text"], loaded: ["llama3.2:3b"], ...over });
const big = (over: Partial<MacSim> = {}): MacSim => ({ id: "big", memoryGb: 64, memoryBandwidthGbps: 400, loadTimeMs: 1000, diskGbps: 2, models: ["llama3.2:3b"], loaded: [], ...over });
const chat = (over: Partial<Work> = {}): Work => ({ model: "llama3.2:3b", embed: false, prefillTokens: 1000, replyTokens: 50, firstOfModel: false, ...over });

describe("bestMs: the fastest node's time for a request alone", () => {
  test("resident: prefill and decode on the node with the most bandwidth, whether or not it holds the model", () => {
    // 1000 × 8.10859375 / 10 + 50 × 8.10859375
    expect(bestMs(chat(), [small(), big()])!.resident).toBeCloseTo(1216.2890625, 6);
  });

  test("the first request of a model pays the load where the model is not resident at start", () => {
    // big: 1216.29 + 1000 ms runner start + 1.9460625 GB at 2 GB/s (973.03 ms), sooner than small's 4865.16 resident
    expect(bestMs(chat({ firstOfModel: true }), [small(), big()])!.withLoad).toBeCloseTo(3189.3203125, 6);
    // with a slow runner start, small's resident copy wins: 1000 × 32.434375 / 10 + 50 × 32.434375
    expect(bestMs(chat({ firstOfModel: true }), [small(), big({ loadTimeMs: 5000 })])!.withLoad).toBeCloseTo(4865.15625, 6);
    // later requests find it loaded
    expect(bestMs(chat(), [small(), big()])!.withLoad).toBeCloseTo(1216.2890625, 6);
  });

  test("an embedding evaluates its inputs at the sim's plain token rate (400/s), whatever the bandwidth", () => {
    expect(bestMs({ model: "nomic-embed-text:latest", embed: true, prefillTokens: 40, replyTokens: 0, firstOfModel: false }, [small()])!.resident).toBeCloseTo(10, 6);
  });

  test("no node with the model on disk and the memory for it: no bound", () => {
    expect(bestMs(chat({ model: "qwen2.5-coder:7b" }), [small(), big()])).toBeNull();
    expect(bestMs(chat(), [small({ memoryGb: 2 })])).toBeNull();
  });
});

describe("workOf: what each request asks, as replay sends it", () => {
  const session: Job = {
    atMs: 0,
    kind: "agent",
    model: "llama3.2:3b",
    path: "/api/chat",
    body: { model: "llama3.2:3b", messages: [{ role: "user", content: "fix the build" }], options: { num_predict: 20 } },
    stream: true,
    session: { next: [{ content: "one two three", afterMs: 0 }] },
  };

  test("a session's later turn prefills only what follows its last prompt and answer", () => {
    const [first, later] = workOf([session]);
    // user marker, 3 words, end marker, assistant marker
    expect(first).toEqual({ model: "llama3.2:3b", embed: false, prefillTokens: 6, replyTokens: 20, firstOfModel: true });
    // end marker (of the answer), user marker, 3 words, end marker, assistant marker
    expect(later).toMatchObject({ prefillTokens: 7, firstOfModel: false });
  });

  test("an embedding's work is its inputs' tokens", () => {
    const embed: Job = { atMs: 0, kind: "embed", model: "nomic-embed-text", path: "/api/embed", body: { model: "nomic-embed-text", input: ["a b", "c d e"] }, stream: false };
    expect(workOf([embed])).toEqual([{ model: "nomic-embed-text:latest", embed: true, prefillTokens: 5, replyTokens: 0, firstOfModel: true }]);
  });
});

describe("verdict: a latency target read against the bound", () => {
  const bound = { resident: 3, withLoads: 3.5 }; // against score's 4: 0.75× and 0.875×
  test("met at or under the target, whatever the bound", () => expect(verdict(3, 4, bound, 0.75)).toBe("met"));
  test("missed where the bound is under the target", () => expect(verdict(3.8, 4, bound, 0.9)).toBe("missed"));
  test("unreachable where even the bound with every model resident is over it", () => expect(verdict(3.9, 4, bound, 0.7)).toBe("unreachable"));
  test("unreachable without loading ahead of demand where only the first loads put the bound over it", () =>
    expect(verdict(3.9, 4, bound, 0.8)).toBe("unreachable without loading ahead of demand"));
});
